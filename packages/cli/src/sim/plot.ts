/** One line of the chart: a label and its success rate per step count. */
export interface Series {
  label: string
  /** Drawn dashed and on top, for a reference curve that others may cover. */
  dashed?: boolean
  points: ReadonlyArray<{ steps: number; successRate: number }>
}

const COLORS = ['#c0392b', '#2471a3', '#229954', '#b9770e', '#7d3c98']

function escapeXml(text: string): string {
  return text.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c] as string)
}

/** A small, dependency-free SVG line chart: success rate (0–100%) against steps per run. */
export function plotSvg(title: string, series: readonly Series[]): string {
  const width = 640
  const height = 400
  const pad = { left: 60, right: 170, top: 40, bottom: 50 }
  const allSteps = series.flatMap((s) => s.points.map((p) => p.steps))
  const maxSteps = Math.max(1, ...allSteps)
  const x = (steps: number) => pad.left + (steps / maxSteps) * (width - pad.left - pad.right)
  const y = (rate: number) => pad.top + (1 - rate) * (height - pad.top - pad.bottom)
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${pad.left}" y="24" font-size="15">${escapeXml(title)}</text>`,
  ]
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    parts.push(`<line x1="${pad.left}" x2="${width - pad.right}" y1="${y(tick)}" y2="${y(tick)}" stroke="#ddd"/>`)
    parts.push(`<text x="${pad.left - 8}" y="${y(tick) + 4}" text-anchor="end">${tick * 100}%</text>`)
  }
  for (const steps of [...new Set(allSteps)].sort((a, b) => a - b)) {
    parts.push(`<text x="${x(steps)}" y="${height - pad.bottom + 18}" text-anchor="middle">${steps}</text>`)
  }
  parts.push(`<text x="${(pad.left + width - pad.right) / 2}" y="${height - 12}" text-anchor="middle">steps per run</text>`)
  // Dashed reference curves go last, so a curve that matches them exactly does not hide them.
  const order = series.map((s, i) => [s, i] as const).sort(([a], [b]) => Number(a.dashed === true) - Number(b.dashed === true))
  for (const [s, i] of order) {
    const color = COLORS[i % COLORS.length] as string
    const dash = s.dashed === true ? ' stroke-dasharray="6 4"' : ''
    const path = s.points.map((p, j) => `${j === 0 ? 'M' : 'L'}${x(p.steps).toFixed(1)},${y(p.successRate).toFixed(1)}`).join(' ')
    parts.push(`<path d="${path}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`)
    for (const p of s.points)
      parts.push(`<circle cx="${x(p.steps).toFixed(1)}" cy="${y(p.successRate).toFixed(1)}" r="3" fill="${color}"/>`)
    const ly = pad.top + 10 + i * 20
    parts.push(
      `<line x1="${width - pad.right + 15}" x2="${width - pad.right + 35}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"${dash}/>`,
    )
    parts.push(`<text x="${width - pad.right + 40}" y="${ly + 4}">${escapeXml(s.label)}</text>`)
  }
  parts.push('</svg>')
  return `${parts.join('\n')}\n`
}
