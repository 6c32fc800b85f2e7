import { createHash } from 'node:crypto'
import type { StackEvent } from '@shallot/core'
import { describe, seconds } from '../demo/timeline.js'
import { waiterOf } from '../run/park.js'
import type { RecordedCall, RecordedEvent, RunRecord } from './record.js'

/** Every string from a run goes through here: tool output and error text are untrusted. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

const cut = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, ' ')
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

type Kind = 'retry' | 'timeout' | 'breaker' | 'refusal' | 'replay' | 'stop' | 'other'

function kindOf(type: string): Kind {
  if (type.startsWith('retry.')) return 'retry'
  if (type.startsWith('timeout.')) return 'timeout'
  if (type === 'circuit-breaker.state') return 'breaker'
  if (type.endsWith('.refused')) return 'refusal'
  if (type === 'idempotency.replayed') return 'replay'
  if (type.endsWith('.stopped') && type !== 'retry.stopped') return 'stop'
  return 'other'
}

/** The terminal timeline's sentence for an event, or its type and fields when the demo does not tell it. */
function sentence(event: RecordedEvent): string {
  const asStack = { ...event.fields, type: event.type, at: event.at, callId: event.callId, tool: event.tool, runId: '' } as StackEvent
  const told = describe(asStack)
  if (told !== undefined) return told
  const fields = Object.entries(event.fields).map(([k, v]) => `${k}=${String(v)}`)
  return `${event.type}${fields.length > 0 ? ` (${fields.join(', ')})` : ''}`
}

const CSS = `
:root{color-scheme:light;--ink:#1d2430;--dim:#6b7485;--line:#d9dee7;--ok:#1f8a4c;--bad:#c62f2f;--retry:#d18b00;--timeout:#e0561b;--breaker:#7a3fc9;--refusal:#c62f2f;--replay:#1f6fd1;--other:#8a93a3}
*{box-sizing:border-box}body{margin:0;font:13px/1.45 ui-sans-serif,system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:#f6f7fa}
header{padding:16px 24px;background:#fff;border-bottom:1px solid var(--line)}h1{font-size:18px;margin:0 0 4px}h2{font-size:14px;margin:0 0 8px}
.meta{color:var(--dim)}.status-stopped{color:var(--bad);font-weight:600}.status-completed{color:var(--ok);font-weight:600}
main{display:flex;gap:16px;padding:16px 24px;align-items:flex-start}
.timeline{flex:1 1 auto;min-width:0;background:#fff;border:1px solid var(--line);border-radius:6px;padding:12px;overflow-x:auto}
.timeline>svg{display:block;max-width:100%;height:auto}
aside{flex:0 0 380px;background:#fff;border:1px solid var(--line);border-radius:6px;padding:12px}
aside.stopped{border-color:var(--bad);box-shadow:inset 4px 0 0 var(--bad)}
pre{white-space:pre-wrap;word-break:break-word;font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;margin:0}
svg text{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;fill:var(--ink)}
svg .turn-label{font-weight:700}svg .said{fill:#8b3a8f}svg .dim{fill:var(--dim)}svg .axis{stroke:var(--line)}
svg .bar{fill:#cfe3d6}svg .bar.soft{fill:#f3c9c9}svg .bar.inflight{fill:#f0d9a8}svg .bar.model{fill:#e6dcf0}
svg .attempt{fill:#9dc7ab}svg .attempt.timed-out{fill:var(--timeout)}svg .wait{fill:none;stroke:var(--retry);stroke-width:2;stroke-dasharray:3 2}
svg .soft-label{fill:var(--bad);font-weight:700}svg .ok-label{fill:var(--ok)}
svg .m-retry{fill:var(--retry)}svg .m-timeout{fill:var(--timeout)}svg .m-breaker{fill:var(--breaker)}svg .m-refusal{fill:var(--refusal)}svg .m-replay{fill:var(--replay)}svg .m-stop{fill:var(--bad)}svg .m-other{fill:var(--other)}
svg .hard-stop{stroke:var(--bad);stroke-width:2}svg .hard-stop-label{fill:var(--bad);font-weight:700}
svg .row-soft{fill:#fdf0f0}svg .row-inflight{fill:#fff6e0}
.legend{display:flex;flex-wrap:wrap;gap:12px;margin:8px 0 0;padding:0;list-style:none;color:var(--dim)}
.legend i{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:4px;vertical-align:-1px}
.k-retry{background:var(--retry)}.k-timeout{background:var(--timeout)}.k-breaker{background:var(--breaker)}.k-refusal{background:var(--refusal)}.k-replay{background:var(--replay)}.k-other{background:var(--other)}
table{border-collapse:collapse;width:100%;margin-top:12px}td,th{border-top:1px solid var(--line);padding:3px 6px;text-align:left;vertical-align:top}th{color:var(--dim);font-weight:600}
td.num{text-align:right;white-space:nowrap}.soft{color:var(--bad)}.ok{color:var(--ok)}
`

const LABEL = 400
const AXIS = 560
/** Room right of the axis for the last calls' outcome labels. */
const MARGIN = 200
const ROW = 22

interface Row {
  readonly kind: 'turn' | 'call'
  readonly y: number
  readonly svg: string
}

/** A wake time as ISO text; a record's number that is no date shows as it is. */
const parkedAt = (wakeAt: number) => (Number.isFinite(new Date(wakeAt).getTime()) ? new Date(wakeAt).toISOString() : String(wakeAt))

/**
 * Renders a run record as one self-contained HTML page: no script, no network, a strict CSP, every
 * string from the run escaped. `shallot report` and `shallot demo --html` write what it returns.
 *
 * @example
 * await writeFile('run.html', renderHtml(await readRecord('run.json')))
 */

export function renderHtml(record: RunRecord): string {
  const end = Math.max(record.durationMs, ...record.events.map((e) => e.at), ...record.turns.map((t) => t.endAt ?? 0), 1)
  const x = (t: number) => LABEL + (Math.min(Math.max(t, 0), end) / end) * AXIS
  const byCall = new Map<string, RecordedEvent[]>()
  for (const e of record.events) byCall.set(e.callId, [...(byCall.get(e.callId) ?? []), e])
  const rows: Row[] = []
  let y = 28
  const turns = record.turns
  for (const [i, turn] of turns.entries()) {
    const next = turns[i + 1]?.at
    const said = `“${cut(turn.text ?? '', 40)}”${turn.inFlight ? ' (in flight at the hard stop)' : ''}`
    let svg = `<g class="turn" data-turn="${turn.turn}"><text class="turn-label" x="4" y="${y + 15}">turn ${turn.turn}</text><text class="said" x="64" y="${y + 15}">${escapeHtml(said)}<title>${escapeHtml(turn.text ?? '')}</title></text>`
    if (turn.at !== undefined && turn.endAt !== undefined)
      svg += `<rect class="bar model" x="${x(turn.at)}" y="${y + 5}" width="${Math.max(x(turn.endAt) - x(turn.at), 2)}" height="12"><title>model call ${seconds(turn.at)} → ${seconds(turn.endAt)}</title></rect>`
    for (const [tool, note] of Object.entries(turn.notes))
      if (turns[i - 1]?.notes[tool] !== note) {
        // Right of the mark in the first half of the axis, left of it in the second, so it stays on the page.
        const at = x(turn.at ?? 0)
        const place = at > LABEL + AXIS / 2 ? `x="${at - 6}" text-anchor="end"` : `x="${at + 6}"`
        svg += `<text class="soft-label" ${place} y="${y + 15}">request marks ${escapeHtml(cut(tool, 30))}: ${escapeHtml(cut(note, 30))}<title>${escapeHtml(note)}</title></text>`
      }
    rows.push({ kind: 'turn', y, svg: `${svg}</g>` })
    y += ROW
    for (const call of turn.calls) {
      rows.push({
        kind: 'call',
        y,
        svg: callRow(call, byCall.get(call.callId) ?? [], { endAt: turn.endAt, nextAt: next, inFlight: turn.inFlight }, y, x),
      })
      y += ROW
    }
  }
  const height = y + 30
  const ticks = Array.from({ length: 9 }, (_, k) => (end * k) / 8)
  const axis = ticks
    .map(
      (t) =>
        `<line class="axis" x1="${x(t)}" y1="18" x2="${x(t)}" y2="${y}"/><text class="dim" x="${x(t) - 14}" y="12">${seconds(t)}</text>`,
    )
    .join('')
  const hardStop =
    record.status === 'stopped' && record.stop !== undefined
      ? `<g class="hard-stop-marker"><line class="hard-stop" x1="${x(record.durationMs)}" y1="18" x2="${x(record.durationMs)}" y2="${y}"/><text class="hard-stop-label" x="${Math.max(x(record.durationMs) - 260, LABEL)}" y="${y + 18}">■ hard stop: ${escapeHtml(record.stop.kind)}</text></g>`
      : ''
  const backgrounds = rows
    .filter((r) => r.svg.includes('data-soft="true"') || r.svg.includes('data-inflight="true"'))
    .map(
      (r) =>
        `<rect class="${r.svg.includes('data-inflight="true"') ? 'row-inflight' : 'row-soft'}" x="0" y="${r.y + 1}" width="${LABEL + AXIS + MARGIN}" height="${ROW - 2}"/>`,
    )
    .join('')
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${LABEL + AXIS + MARGIN}" height="${height}" viewBox="0 0 ${LABEL + AXIS + MARGIN} ${height}" role="img" aria-label="timeline of run ${escapeHtml(record.runId)}">${backgrounds}${axis}${rows.map((r) => r.svg).join('')}${hardStop}</svg>`
  const calls = turns.flatMap((t) => t.calls.map((c) => ({ turn: t.turn, call: c })))
  const table = `<table class="calls"><thead><tr><th>turn</th><th>tool</th><th>arguments</th><th>attempts</th><th>what the model read</th></tr></thead><tbody>${calls
    .map(
      ({ turn, call }) =>
        `<tr data-call-row="${escapeHtml(call.callId)}"><td class="num">${turn}</td><td>${escapeHtml(call.name)}</td><td><code>${escapeHtml(cut(call.args, 80))}</code></td><td class="num">${call.attempts}${call.replayed ? ' (replayed)' : ''}</td><td class="${call.result === undefined ? '' : call.result.ok ? 'ok' : 'soft'}">${call.result === undefined ? '(no result: in flight at the hard stop)' : `${call.result.ok ? '✓' : '✗ soft error'} ${escapeHtml(cut(call.result.content, 160))}`}</td></tr>`,
    )
    .join('')}</tbody></table>`
  const aside =
    record.stop !== undefined
      ? `<aside class="stopped" id="failure-report"><h2>Failure report: ${escapeHtml(record.stop.kind)}</h2><pre>${escapeHtml(record.stop.report.text)}</pre></aside>`
      : record.parked !== undefined
        ? `<aside id="outcome"><h2>Parked until ${escapeHtml(parkedAt(record.parked.wakeAt))}</h2><pre>${escapeHtml(`${waiterOf(record.parked.reason)} answered ${record.parked.reason.code}; ${'model' in record.parked.reason ? 'the model is asked again' : 'it runs again'} when the run is resumed`)}</pre></aside>`
        : `<aside id="outcome"><h2>Completed</h2><pre>${escapeHtml(record.output ?? '')}</pre></aside>`
  const softErrors = calls.filter(({ call }) => call.result?.ok === false).length
  // Counted as the failure report counts them: the turn in flight at the stop did not complete.
  const completed = turns.filter((t) => !t.inFlight)
  const inFlight = turns.filter((t) => t.inFlight).reduce((n, t) => n + t.calls.length, 0)
  const counted = `${completed.length} turns · ${completed.reduce((n, t) => n + t.calls.length, 0)} tool calls${inFlight === 0 ? '' : ` completed · ${inFlight} in flight ${record.status === 'parked' ? 'when it parked' : 'at the hard stop'}`}`
  const body = `<header><h1>shallot run ${escapeHtml(record.runId)}</h1><div class="meta"><span class="status-${record.status}">${record.status === 'stopped' ? `stopped: ${escapeHtml(record.stop?.kind ?? '')}` : record.status === 'parked' ? 'parked' : 'completed'}</span> · ${counted} · ${softErrors} soft errors · ${record.steps} steps · ${seconds(record.durationMs)}</div><div class="meta">task: ${escapeHtml(record.task)}</div></header>
<main><section class="timeline"><h2>Timeline</h2>${svg}<ul class="legend"><li><i class="k-retry"></i>retry / backoff wait (dashed)</li><li><i class="k-timeout"></i>timeout</li><li><i class="k-breaker"></i>breaker state</li><li><i class="k-refusal"></i>refusal</li><li><i class="k-replay"></i>replay</li><li><i class="k-other"></i>other layer event</li></ul>${table}</section>${aside}</main>`
  const hash = createHash('sha256').update(CSS).digest('base64')
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'sha256-${hash}'; img-src 'none'; script-src 'none'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>shallot run ${escapeHtml(record.runId)}</title>
<style>${CSS}</style></head>
<body>${body}</body></html>
`
}

/** Where a call's turn sits on the time axis: when its model call ended, when the next turn began, and whether the hard stop caught it. */
interface TurnSpan {
  readonly endAt: number | undefined
  readonly nextAt: number | undefined
  readonly inFlight: boolean
}

/** One call's row of the timeline, at height `y`, times placed by `x`. */
function callRow(call: RecordedCall, events: readonly RecordedEvent[], turn: TurnSpan, y: number, x: (t: number) => number): string {
  const { endAt: turnEnd, nextAt: nextTurn, inFlight } = turn
  const times = events.flatMap((e) => [e.at, e.type === 'timeout.expired' ? e.at - Number(e.fields.timeoutMs ?? 0) : e.at])
  const start = Math.min(turnEnd ?? Number.POSITIVE_INFINITY, ...times)
  const stop = Math.max(
    nextTurn ?? 0,
    ...times,
    ...events.map((e) => (e.type === 'retry.scheduled' ? e.at + Number(e.fields.delayMs ?? 0) : e.at)),
  )
  const from = Number.isFinite(start) ? start : 0
  const soft = call.result?.ok === false
  const cls = inFlight ? 'bar inflight' : soft ? 'bar soft' : 'bar'
  const code = soft ? /"error":"([^"]{1,60})"/.exec(call.result?.content ?? '')?.[1] : undefined
  let svg = `<g class="call" data-call="${escapeHtml(call.callId)}" data-tool="${escapeHtml(call.name)}" data-soft="${soft}" data-inflight="${inFlight}">`
  svg += `<text x="24" y="${y + 15}">→ ${escapeHtml(cut(call.name, 24))} <tspan class="dim">${escapeHtml(cut(call.args, 30))}</tspan><title>${escapeHtml(call.name)} ${escapeHtml(call.args)}</title></text>`
  svg += `<rect class="${cls}" x="${x(from)}" y="${y + 6}" width="${Math.max(x(stop) - x(from), 3)}" height="10"><title>${escapeHtml(call.name)}: ${call.attempts} attempt(s)${call.replayed ? ', replayed' : ''}</title></rect>`
  for (const e of events) {
    if (e.type === 'timeout.expired') {
      const ms = Number(e.fields.timeoutMs ?? 0)
      svg += `<rect class="attempt timed-out" x="${x(e.at - ms)}" y="${y + 6}" width="${Math.max(x(e.at) - x(e.at - ms), 2)}" height="10"><title>${escapeHtml(sentence(e))}</title></rect>`
    }
    if (e.type === 'retry.scheduled') {
      const ms = Number(e.fields.delayMs ?? 0)
      svg += `<line class="wait" x1="${x(e.at)}" y1="${y + 11}" x2="${Math.max(x(e.at + ms), x(e.at) + 2)}" y2="${y + 11}"><title>backoff wait ${Math.round(ms)} ms</title></line>`
    }
  }
  // Events at the same instant (a timeout and the breaker opening) are set side by side, not on top of each other.
  const taken = new Map<number, number>()
  let rightmost = 0
  for (const e of events) {
    const kind = kindOf(e.type)
    const r = kind === 'other' ? 3 : 5
    const slot = Math.round(x(e.at) / 6)
    const offset = taken.get(slot) ?? 0
    taken.set(slot, offset + 1)
    rightmost = Math.max(rightmost, x(e.at) + offset * 9 + r)
    svg += `<circle class="marker m-${kind}" data-event="${escapeHtml(e.type)}" cx="${x(e.at) + offset * 9}" cy="${y + 11}" r="${r}"><title>${escapeHtml(`${sentence(e)} @${seconds(e.at)}`)}</title></circle>`
  }
  const end = Math.max(x(stop), x(from) + 3, rightmost) + 6
  const label = inFlight
    ? '<tspan class="soft-label">in flight</tspan>'
    : soft
      ? `<tspan class="soft-label">✗ ${escapeHtml(code ?? 'soft error')}</tspan>`
      : call.result !== undefined
        ? `<tspan class="ok-label">✓</tspan>${call.attempts > 1 ? `<tspan class="dim"> ${call.attempts} attempts</tspan>` : ''}${call.replayed ? '<tspan class="dim"> replayed</tspan>' : ''}`
        : ''
  svg += `<text x="${end}" y="${y + 15}">${label}<title>${escapeHtml(call.result?.content ?? '')}</title></text>`
  return `${svg}</g>`
}
