import type { ParkingOutcome } from '@shallot/agent'
import { type Clock, type ModelAdapter, type Stack, type StackEvent, systemClock } from '@shallot/core'
import { cut, MAX_ARGS, MAX_EVENTS, MAX_FIELD, MAX_TEXT, type RecordedEvent, type RecordedTurn, type RunRecord } from './record.js'

function scalar(value: unknown): string | number | boolean | null {
  if (value === null || typeof value === 'boolean' || typeof value === 'string')
    return typeof value === 'string' ? cut(value, MAX_FIELD) : value
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value)
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return null
  try {
    return cut(JSON.stringify(value) ?? String(value), MAX_FIELD)
  } catch {
    return cut(String(value), MAX_FIELD)
  }
}

function serializeArgs(args: unknown): string {
  try {
    return cut(JSON.stringify(args) ?? 'null', MAX_ARGS)
  } catch {
    return '(arguments that do not serialize)'
  }
}

/** Listens to a stack and times the model calls of one run, then builds its `RunRecord`. */
export interface RunRecorder {
  /** Wraps the agent's model so each turn gets its start and end time and its request's tool notes. */
  model(model: ModelAdapter): ModelAdapter
  /** Subscribes to the stack's events; `finish` unsubscribes. */
  listen(stack: Stack): void
  /** Builds the record from the outcome and what was heard, and stops listening. */
  finish(outcome: ParkingOutcome): RunRecord
}

/**
 * Starts recording a run: wrap the model before building the agent, listen to its stack, and hand
 * the outcome to `finish`.
 *
 * @example
 * const recorder = recordRun({ clock })
 * const agent = createAgent({ model: recorder.model(model), tools, clock })
 * recorder.listen(agent.stack)
 * const record = recorder.finish(await agent.run({ input: 'refund ORD-42' }))
 * await writeFile('run.json', JSON.stringify(record))
 */
export function recordRun(options: { clock?: Clock | undefined } = {}): RunRecorder {
  const clock = options.clock ?? systemClock
  const started = clock.now()
  const since = () => clock.now() - started
  const events: RecordedEvent[] = []
  const modelCalls: ModelCall[] = []
  const unsubscribe: Array<() => void> = []
  let dropped = 0
  return {
    model(model) {
      return {
        // The agent names the model in reports and events by these: the recorder must not hide them.
        ...(model.name === undefined ? {} : { name: model.name }),
        ...(model.provider === undefined ? {} : { provider: model.provider }),
        async generate(request) {
          const at = since()
          const notes: Record<string, string> = {}
          for (const tool of request.tools)
            if (tool.note !== undefined) Object.defineProperty(notes, tool.name, { value: cut(tool.note, MAX_FIELD), enumerable: true })
          const response = await model.generate(request)
          // A failed model call (retried by the agent) makes no turn, so only answers are counted.
          modelCalls.push({
            at,
            endAt: since(),
            notes,
            text: response.text,
            calls: (response.toolCalls ?? []).map((c) => ({ id: c.id, args: c.args })),
          })
          return response
        },
      }
    },
    listen(stack) {
      unsubscribe.push(
        stack.on((event: StackEvent) => {
          if (events.length >= MAX_EVENTS) {
            dropped++
            return
          }
          const fields: Record<string, string | number | boolean | null> = {}
          for (const [key, value] of Object.entries(event)) {
            if (key === 'type' || key === 'at' || key === 'runId' || key === 'callId' || key === 'tool') continue
            Object.defineProperty(fields, key, { value: scalar(value), enumerable: true })
          }
          events.push({ type: event.type, at: event.at - started, callId: event.callId, tool: event.tool, fields })
        }),
      )
    },
    finish(outcome) {
      for (const off of unsubscribe.splice(0)) off()
      return buildRecord(outcome, events, modelCalls, since(), dropped)
    },
  }
}

interface ModelCall {
  readonly at: number
  readonly endAt: number
  readonly notes: Record<string, string>
  readonly text: string | undefined
  readonly calls: ReadonlyArray<{ id: string; args: unknown }>
}

function buildRecord(
  outcome: ParkingOutcome,
  events: readonly RecordedEvent[],
  modelCalls: readonly ModelCall[],
  durationMs: number,
  droppedEvents: number,
): RunRecord {
  const results = new Map<string, { ok: boolean; content: string }>()
  for (const m of outcome.transcript) if (m.role === 'tool') results.set(m.callId, { ok: m.ok, content: cut(m.content, MAX_TEXT) })
  const fromReport = new Map(outcome.status === 'stopped' ? outcome.report.completedCalls.map((c) => [c.id, c]) : [])
  const byCall = new Map<string, RecordedEvent[]>()
  for (const e of events) byCall.set(e.callId, [...(byCall.get(e.callId) ?? []), e])
  const attemptsOf = (callId: string) =>
    fromReport.get(callId)?.attempts ?? 1 + (byCall.get(callId) ?? []).filter((e) => e.type === 'retry.scheduled').length
  const replayedOf = (callId: string) =>
    fromReport.get(callId)?.replayed ?? (byCall.get(callId) ?? []).some((e) => e.type === 'idempotency.replayed')
  const turns: RecordedTurn[] = []
  const seen = new Set<string>()
  for (const message of outcome.transcript) {
    if (message.role !== 'assistant') continue
    const index = turns.length
    const timing = modelCalls[index]
    turns.push({
      turn: index + 1,
      ...(message.content !== undefined ? { text: cut(message.content, MAX_TEXT) } : {}),
      ...(timing !== undefined ? { at: timing.at, endAt: timing.endAt } : {}),
      notes: timing?.notes ?? {},
      inFlight: false,
      calls: message.toolCalls.map((call) => {
        seen.add(call.id)
        const result = results.get(call.id)
        return {
          callId: call.id,
          name: call.name,
          args: serializeArgs(call.args),
          ...(result !== undefined ? { result } : {}),
          attempts: attemptsOf(call.id),
          replayed: replayedOf(call.id),
        }
      }),
    })
  }
  // The turn that stopped the run was dropped from the transcript; its calls are known from their events.
  const orphans = [...byCall.entries()].filter(([id]) => !seen.has(id))
  if (orphans.length > 0) {
    // The model's answer that made it, when the model was wrapped, still holds its words and arguments.
    const timing = modelCalls[turns.length]
    const asked = new Map((timing?.calls ?? []).map((c) => [c.id, c.args]))
    turns.push({
      turn: turns.length + 1,
      ...(timing?.text !== undefined ? { text: cut(timing.text, MAX_TEXT) } : {}),
      ...(timing !== undefined ? { at: timing.at, endAt: timing.endAt } : {}),
      notes: timing?.notes ?? {},
      inFlight: true,
      calls: orphans.map(([callId, list]) => ({
        callId,
        name: list[0]?.tool ?? '?',
        args: asked.has(callId) ? serializeArgs(asked.get(callId)) : '',
        attempts: attemptsOf(callId),
        replayed: replayedOf(callId),
      })),
    })
  }
  const base = {
    format: 'shallot.run-record' as const,
    version: 1 as const,
    runId: outcome.runId,
    task: cut(outcome.transcript.find((m) => m.role === 'user')?.content ?? '', MAX_TEXT),
    durationMs,
    steps: outcome.steps,
    turns,
    events:
      droppedEvents > 0
        ? [...events, { type: 'record.truncated', at: durationMs, callId: '', tool: '', fields: { dropped: droppedEvents } }]
        : events,
  }
  if (outcome.status === 'completed') return { ...base, status: 'completed', output: cut(outcome.output, MAX_TEXT) }
  if (outcome.status === 'parked') {
    const { reason: r } = outcome
    const { waitMs } = r
    const code = cut(r.code, MAX_FIELD)
    const reason =
      'model' in r
        ? { code, model: cut(r.model, MAX_FIELD), waitMs }
        : { code, tool: cut(r.tool, MAX_FIELD), callId: cut(r.callId, MAX_FIELD), waitMs }
    return { ...base, status: 'parked', parked: { wakeAt: outcome.wakeAt, reason } }
  }
  const { report, error } = outcome
  return {
    ...base,
    status: 'stopped',
    stop: {
      kind: error.kind,
      message: cut(error.message, MAX_TEXT),
      report: { text: cut(report.text, MAX_TEXT * 4), why: report.why, nextSteps: report.nextSteps },
    },
  }
}
