import { readFile, stat } from 'node:fs/promises'
import type { ParkingOutcome, ParkReason } from '@shallot/agent'
import { type Clock, type ModelAdapter, type Stack, type StackEvent, systemClock } from '@shallot/core'
import { z } from 'zod'

/** A layer event as recorded: its type, time, call, and its own fields flattened to scalars. */
export interface RecordedEvent {
  readonly type: string
  /** Milliseconds since the run started, on the run's clock. */
  readonly at: number
  readonly callId: string
  readonly tool: string
  readonly fields: Readonly<Record<string, string | number | boolean | null>>
}

/** One logical tool call: what the model asked, what it read back, and how many attempts it took. */
export interface RecordedCall {
  readonly callId: string
  readonly name: string
  /** The arguments, serialized (and cut at 2,000 characters). */
  readonly args: string
  /** Absent for a call in flight when the run stopped: the model never read a result. */
  readonly result?: { readonly ok: boolean; readonly content: string }
  readonly attempts: number
  readonly replayed: boolean
}

/** One model call and the tool calls it asked for. */
export interface RecordedTurn {
  readonly turn: number
  readonly text?: string
  /** When the model call that made this turn started and answered; absent when the model was not wrapped. */
  readonly at?: number
  readonly endAt?: number
  /** Notes the layers attached to tools in this turn's request (e.g. "UNAVAILABLE: circuit open"). */
  readonly notes: Readonly<Record<string, string>>
  readonly calls: readonly RecordedCall[]
  /** True for the turn that was in flight when the run stopped (it is not in the transcript). */
  readonly inFlight: boolean
}

/**
 * Everything the HTML timeline needs about one run, on one time axis. Plain JSON; `shallot demo
 * --record run.json` writes one and `shallot report run.json` reads it back.
 */
export interface RunRecord {
  readonly format: 'shallot.run-record'
  readonly version: 1
  readonly runId: string
  readonly task: string
  readonly status: 'completed' | 'stopped' | 'parked'
  /** Milliseconds from the start to the end of the run. */
  readonly durationMs: number
  readonly steps: number
  readonly output?: string
  readonly turns: readonly RecordedTurn[]
  readonly events: readonly RecordedEvent[]
  /** The hard stop and the failure report of a stopped run. */
  readonly stop?: {
    readonly kind: string
    readonly message: string
    readonly report: { readonly text: string; readonly why: string; readonly nextSteps: string }
  }
  /** A parked run: when it may go on (wall-clock epoch ms) and the call (a tool's, or the model's) it waits for. */
  readonly parked?: { readonly wakeAt: number; readonly reason: ParkReason }
}

/** Thrown when a run record cannot be read: the message names the file and what is wrong with it. */
export class RecordError extends Error {
  override readonly name = 'RecordError'
}

const MAX_TEXT = 20_000
const MAX_ARGS = 2_000
const MAX_FIELD = 1_000
/** Largest record file `readRecord` accepts; a real run's record is a few hundred KiB. */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024
const MAX_EVENTS = 50_000
const MAX_TURNS = 5_000
const MAX_CALLS_PER_TURN = 256

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

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

const text = (max: number) => z.string().max(max)
const time = z.number().finite().min(0).max(1e13)
const key = text(200).refine((k) => k !== '__proto__' && k !== 'constructor' && k !== 'prototype', 'a reserved key')

const recordSchema = z.strictObject({
  format: z.literal('shallot.run-record'),
  version: z.literal(1),
  runId: text(500),
  task: text(MAX_TEXT),
  status: z.enum(['completed', 'stopped', 'parked']),
  durationMs: time,
  steps: z.number().int().min(0).max(1e9),
  output: text(MAX_TEXT).optional(),
  turns: z
    .array(
      z.strictObject({
        turn: z.number().int().min(1).max(1e9),
        text: text(MAX_TEXT).optional(),
        at: time.optional(),
        endAt: time.optional(),
        notes: z.record(key, text(MAX_FIELD)),
        inFlight: z.boolean(),
        calls: z
          .array(
            z.strictObject({
              callId: text(500),
              name: text(500),
              args: text(MAX_ARGS),
              result: z.strictObject({ ok: z.boolean(), content: text(MAX_TEXT) }).optional(),
              attempts: z.number().int().min(0).max(1e6),
              replayed: z.boolean(),
            }),
          )
          .max(MAX_CALLS_PER_TURN),
      }),
    )
    .max(MAX_TURNS),
  events: z
    .array(
      z.strictObject({
        type: text(200),
        at: time,
        callId: text(500),
        tool: text(500),
        fields: z.record(key, z.union([text(MAX_FIELD), z.number().finite(), z.boolean(), z.null()])),
      }),
    )
    .max(MAX_EVENTS + 1),
  stop: z
    .strictObject({
      kind: text(200),
      message: text(MAX_TEXT),
      report: z.strictObject({ text: text(MAX_TEXT * 4), why: text(MAX_TEXT), nextSteps: text(MAX_TEXT) }),
    })
    .optional(),
  parked: z
    .strictObject({
      wakeAt: time,
      reason: z.union([
        z.strictObject({ code: text(MAX_FIELD), tool: text(MAX_FIELD), callId: text(MAX_FIELD), waitMs: time }),
        z.strictObject({ code: text(MAX_FIELD), model: text(MAX_FIELD), waitMs: time }),
      ]),
    })
    .optional(),
})

/**
 * Checks a parsed value is a run record, naming `source` and the first wrong field when it is not.
 *
 * @example
 * const record = parseRecord(JSON.parse(text), 'run.json')
 */
export function parseRecord(value: unknown, source: string): RunRecord {
  const parsed = recordSchema.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue === undefined || issue.path.length === 0 ? '' : ` at ${issue.path.map(String).join('.')}`
    throw new RecordError(
      `${source} is not a shallot run record${where}: ${issue?.message ?? 'invalid'}. Write one with shallot demo --record ${source}`,
    )
  }
  return parsed.data as RunRecord
}

/** No recorder writes a `__proto__` key: one in a file was put there by hand, so the file is refused, not quietly cleaned. */
function refuseProto(key: string, value: unknown): unknown {
  if (key === '__proto__') throw new RecordError('holds a "__proto__" key, which no run record has')
  return value
}

/**
 * Reads and validates a run record file; too large, not JSON or not a record → a `RecordError` naming the file.
 *
 * @example
 * const record = await readRecord('run.json')
 */
export async function readRecord(file: string): Promise<RunRecord> {
  let size: number
  try {
    size = (await stat(file)).size
  } catch {
    throw new RecordError(`no such file: ${file}`)
  }
  if (size > MAX_RECORD_BYTES)
    throw new RecordError(`${file} is ${size} bytes; a run record is at most ${MAX_RECORD_BYTES} bytes (is it the right file?)`)
  let value: unknown
  try {
    value = JSON.parse(await readFile(file, 'utf8'), refuseProto)
  } catch (err) {
    if (err instanceof RecordError) throw new RecordError(`${file} ${err.message}`)
    throw new RecordError(`${file} is not JSON: ${err instanceof Error ? err.message : String(err)}`)
  }
  return parseRecord(value, file)
}
