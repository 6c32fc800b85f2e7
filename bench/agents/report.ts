/** The table (Markdown, for stdout and the docs), the fault matrix and the SVG chart. */
import type { Summary } from './metrics.js'

const pct = (share: number) => `${(share * 100).toFixed(1)} %`
const perRun = (total: number, runs: number) => (runs === 0 ? '0' : (total / runs).toFixed(2))

export function table(rows: readonly Summary[]): string {
  const head =
    '| contender | runs | success | clean success | duplicated a write | failed, effect left | stopped | crashed | hung | tool execs / run | model reqs / run | p50 | p95 |'
  const rule = '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
  const lines = rows.map(
    (r) =>
      `| ${r.contender} | ${r.runs} | ${pct(r.success)} | ${pct(r.cleanSuccess)} | ${pct(r.duplicated)} | ${pct(r.failedWithEffect)} | ${pct(r.stopped)} | ${pct(r.crashed)} | ${pct(r.hung)} | ${perRun(r.toolExecutions, r.runs)} | ${perRun(r.modelRequests, r.runs)} | ${r.p50s.toFixed(1)} s | ${r.p95s.toFixed(1)} s |`,
  )
  return [head, rule, ...lines].join('\n')
}

/** One row per fault kind, one column per contender: clean success, and the duplicates / hangs behind a miss. */
export function matrix(
  kinds: readonly string[],
  contenders: readonly string[],
  cell: (kind: string, contender: string) => Summary,
): string {
  const head = `| fault (alone) | ${contenders.join(' | ')} |`
  const rule = `|---|${contenders.map(() => '---:').join('|')}|`
  const lines = kinds.map((kind) => {
    const cells = contenders.map((contender) => {
      const s = cell(kind, contender)
      const notes = [
        s.duplicated > 0 ? `dup ${pct(s.duplicated)}` : '',
        s.hung > 0 ? `hung ${pct(s.hung)}` : '',
        s.crashed > 0 ? `crash ${pct(s.crashed)}` : '',
      ]
        .filter(Boolean)
        .join(', ')
      return `${pct(s.cleanSuccess)}${notes ? ` (${notes})` : ''}`
    })
    return `| ${kind} | ${cells.join(' | ')} |`
  })
  return [head, rule, ...lines].join('\n')
}

/** The fault kinds shown row by row with their cost: the writes, the dead upstream, the model's outages. */
export const FOCUS: ReadonlyArray<{ readonly kind: string; readonly label: string }> = [
  { kind: 'write_refused', label: 'write failed before anything happened (connection refused)' },
  { kind: 'write_timeout_after_effect', label: 'write landed, then timed out' },
  { kind: 'write_timeout_after_effect_x2', label: 'write landed, then timed out ×2' },
  { kind: 'dead_upstream', label: 'dead upstream (the mirror answers)' },
  { kind: 'model_429_x3', label: 'model 429 ×3 (Retry-After 1 s)' },
  { kind: 'model_503_30s', label: 'model 503 for 30 s' },
  { kind: 'model_429_ra120', label: 'model 429, Retry-After 120 s' },
]

/** One fault kind alone, one row per contender: outcomes and what they cost in requests and time. */
export function focus(label: string, rows: readonly Summary[]): string {
  const head = `| ${label} | runs | clean success | duplicated a write | stopped | hung | tool execs / run | model reqs / run | mean time | p95 |`
  const rule = '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
  const lines = rows.map(
    (r) =>
      `| ${r.contender} | ${r.runs} | ${pct(r.cleanSuccess)} | ${pct(r.duplicated)} | ${pct(r.stopped)} | ${pct(r.hung)} | ${perRun(r.toolExecutions, r.runs)} | ${perRun(r.modelRequests, r.runs)} | ${r.meanS.toFixed(1)} s | ${r.p95s.toFixed(1)} s |`,
  )
  return [head, rule, ...lines].join('\n')
}

const BARS = [
  { key: 'success', label: 'success', color: '#9db4c0' },
  { key: 'cleanSuccess', label: 'clean success', color: '#2e7d32' },
  { key: 'duplicated', label: 'duplicated a write', color: '#c62828' },
  { key: 'hung', label: 'hung', color: '#ef6c00' },
] as const

/** Grouped horizontal bars, one group per contender; plain SVG, no fonts to load. */
export function chart(rows: readonly Summary[], title: string): string {
  const left = 190
  const width = 760
  const barH = 9
  const groupH = BARS.length * barH + 14
  const top = 48
  const height = top + rows.length * groupH + 30
  const scale = (share: number) => share * (width - left - 60)
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="18" font-size="13" font-weight="bold">${escapeXml(title)}</text>`,
  ]
  BARS.forEach((bar, i) => {
    parts.push(`<rect x="${left + i * 140}" y="28" width="10" height="10" fill="${bar.color}"/>`)
    parts.push(`<text x="${left + i * 140 + 14}" y="37">${bar.label}</text>`)
  })
  rows.forEach((row, g) => {
    const y0 = top + g * groupH
    parts.push(`<text x="${left - 8}" y="${y0 + (BARS.length * barH) / 2 + 4}" text-anchor="end">${escapeXml(row.contender)}</text>`)
    BARS.forEach((bar, i) => {
      const value = row[bar.key]
      const y = y0 + i * barH
      parts.push(`<rect x="${left}" y="${y}" width="${scale(value).toFixed(1)}" height="${barH - 1}" fill="${bar.color}"/>`)
      parts.push(`<text x="${left + scale(value) + 4}" y="${y + barH - 1}" font-size="9">${(value * 100).toFixed(1)}</text>`)
    })
  })
  parts.push(`<line x1="${left}" y1="${top - 4}" x2="${left}" y2="${height - 24}" stroke="#333"/>`)
  parts.push(`<text x="${left}" y="${height - 8}" fill="#555">% of runs; from bench/agents (pnpm bench:agents)</text>`)
  parts.push('</svg>')
  return `${parts.join('\n')}\n`
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}
