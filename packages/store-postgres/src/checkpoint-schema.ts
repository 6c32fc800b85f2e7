import type { RunSnapshot } from '@shallot/agent'
import { z } from 'zod'
import { jsonValue } from './stored-values.js'

const count = z.number().int().min(0)

const toolCall = z.looseObject({ id: z.string(), name: z.string(), args: jsonValue.optional() })

const message = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('user'), content: z.string() }),
  z.looseObject({ role: z.literal('assistant'), content: z.string().optional(), toolCalls: z.array(toolCall) }),
  z.looseObject({ role: z.literal('tool'), callId: z.string(), name: z.string(), content: z.string(), ok: z.boolean() }),
])

const callRecord = z.looseObject({
  id: z.string(),
  name: z.string(),
  ok: z.boolean(),
  code: z.string().optional(),
  attempts: count,
  replayed: z.boolean(),
})

/**
 * A run snapshot as read back: every field `createAgent` needs to continue the run, with its type.
 * Fields this version does not know are kept (a newer core may add some), and `parked` is a status
 * the agent loop is to gain; plain-JSON checks (no `__proto__`, finite numbers) run before this.
 */
export const runSnapshotSchema = z.looseObject({
  version: z.literal(1),
  runId: z.string().min(1),
  input: z.string(),
  status: z.enum(['running', 'completed', 'stopped', 'parked']),
  turn: count,
  stepsUsed: count,
  state: z.record(z.string(), jsonValue),
  transcript: z.array(message),
  turns: z.array(z.looseObject({ turn: count, text: z.string().optional(), calls: z.array(callRecord) })),
  output: z.string().optional(),
}) as unknown as z.ZodType<RunSnapshot>
