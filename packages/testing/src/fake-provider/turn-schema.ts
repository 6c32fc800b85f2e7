import { z } from 'zod'

const headers = z.record(z.string(), z.string())
const usage = z.strictObject({
  inputTokens: z.number().int().nonnegative().optional(),
  outputTokens: z.number().int().nonnegative().optional(),
})
const toolCall = z
  .strictObject({ id: z.string().min(1).optional(), name: z.string().min(1), args: z.unknown().optional(), rawArgs: z.string().optional() })
  .refine((call) => !(call.args !== undefined && call.rawArgs !== undefined), 'give args or rawArgs, not both')
const reply = z.strictObject({
  text: z.string().optional(),
  toolCalls: z.array(toolCall).optional(),
  finishReason: z.enum(['stop', 'tool_calls', 'length']).optional(),
  usage: usage.optional(),
  headers: headers.optional(),
})
const seconds = z.number().finite().nonnegative()

const httpFaults = [
  'rate_limit',
  'server_error',
  'overloaded',
  'invalid_request',
  'authentication',
  'permission_denied',
  'insufficient_quota',
  'context_length_exceeded',
] as const
const streamFaults = ['reset', 'reset_mid_stream', 'hang', 'stall', 'stream_error'] as const

const faultSchemas = [
  z.strictObject({
    fault: z.enum(httpFaults),
    status: z.number().int().min(400).max(599).optional(),
    message: z.string().optional(),
    retryAfterSeconds: seconds.optional(),
    retryAfterMs: seconds.optional(),
    headers: headers.optional(),
  }),
  z.strictObject({
    fault: z.enum(streamFaults),
    reply: reply.optional(),
    after: z.number().int().nonnegative().optional(),
    errorType: z.string().min(1).optional(),
    message: z.string().optional(),
  }),
  z.strictObject({ fault: z.literal('truncated'), toolCall, text: z.string().optional(), usage: usage.optional() }),
  z.strictObject({
    fault: z.literal('http'),
    status: z.number().int().min(100).max(599),
    body: z.unknown().optional(),
    headers: headers.optional(),
  }),
] as const

const faultNames = [...httpFaults, ...streamFaults, 'truncated', 'http'] as const

/**
 * The schema a turn is checked against: a reply, or the fault its `fault` names, so an error speaks
 * of that fault's options rather than of every shape a turn may take.
 */
export function schemaOf(turn: unknown): z.ZodType {
  if (typeof turn !== 'object' || turn === null || !('fault' in turn)) return reply
  const fault = (turn as { fault: unknown }).fault
  const at = faultNames.indexOf(fault as (typeof faultNames)[number])
  if (at < 0) return z.object({ fault: z.enum(faultNames) })
  if (at < httpFaults.length) return faultSchemas[0]
  if (at < httpFaults.length + streamFaults.length) return faultSchemas[1]
  return fault === 'truncated' ? faultSchemas[2] : faultSchemas[3]
}

export const optionsSchema = z.strictObject({
  script: z.array(z.unknown()).optional(),
  onEnd: z.enum(['fail', 'repeat']).optional(),
  now: z.function().optional(),
  maxBodyBytes: z.number().int().positive().optional(),
  apis: z
    .array(z.enum(['openai-chat', 'openai-responses', 'anthropic-messages']))
    .min(1)
    .optional(),
})
