/**
 * How old something is, in words a model reads at a glance: seconds under a minute, minutes under
 * two hours, hours under two days, then days. Always rounded down, so "4 min" means at least four.
 *
 * @example
 * describeAge(245_000) // '4 min'
 */
export function describeAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000))
  if (s < 60) return `${s} s`
  const min = Math.floor(s / 60)
  if (min < 120) return `${min} min`
  const h = Math.floor(min / 60)
  if (h < 48) return `${h} h`
  return `${Math.floor(h / 24)} days`
}
