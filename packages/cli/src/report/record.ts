import { readFile, stat } from 'node:fs/promises'
import type { ParkReason } from '@shallot/agent'
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
  /** A parked run: when it may go on (wall-clock epoch ms) and the call it waits for. */
  readonly parked?: {
    readonly wakeAt: number
    readonly reason: ParkReason
  }
}

/** Thrown when a run record cannot be read: the message names the file and what is wrong with it. */
export class RecordError extends Error {
  override readonly name = 'RecordError'
}

/** How much of each text a record keeps: what the recorder cuts to and what a record file may hold. */
export const MAX_TEXT = 20_000
export const MAX_ARGS = 2_000
export const MAX_FIELD = 1_000
/** Largest record file `readRecord` accepts; a real run's record is a few hundred KiB. */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024
export const MAX_EVENTS = 50_000
const MAX_TURNS = 5_000
const MAX_CALLS_PER_TURN = 256

/** `text` cut to `max` characters, the cut marked with an ellipsis. */
export const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

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
