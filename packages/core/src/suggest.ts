function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] as number
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] as number
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      row[j] = Math.min(above + 1, (row[j - 1] as number) + 1, diagonal + cost)
      diagonal = above
    }
  }
  return row[b.length] as number
}

/**
 * The candidate nearest to `input` by edit distance (case-insensitive), or `undefined` when none
 * is close enough to be a plausible typo (more than a third of the longer name differs).
 *
 * @example
 * closest('read_fil', ['read_file', 'write_file']) // 'read_file'
 */
export function closest(input: string, candidates: Iterable<string>): string | undefined {
  const needle = input.toLowerCase()
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const candidate of candidates) {
    const d = distance(needle, candidate.toLowerCase())
    const longer = Math.max(needle.length, candidate.length)
    const limit = Math.max(2, Math.ceil(longer / 3))
    // The floor of 2 forgives short names a typo or two, but a name with nothing in common ('rm' for 'ls') is no typo.
    if (d <= limit && d < longer && d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return best
}
