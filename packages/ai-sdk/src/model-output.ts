import type { Stack } from '@shallot/core'

/**
 * A successful output as the model reads it: one text, the stack's (`stack.modelText`: invisible characters
 * stripped, the stack's secrets redacted, capped), as `createAgent` sends it. A tool's own `toModelOutput`
 * keeps its shape, and its text parts get the same treatment.
 */
export function modelOutput(stack: Stack, output: unknown): { type: 'text'; value: string } {
  const text = typeof output === 'string' ? output : (JSON.stringify(output ?? null) ?? 'null')
  return { type: 'text', value: stack.modelText(text) }
}

/** A tool's own model output with its text part as the stack checks it; other parts as they are. */
export function checkedOutput<T>(stack: Stack, output: T): T {
  const part = output as { type?: unknown; value?: unknown } | null
  if (part !== null && typeof part === 'object' && part.type === 'text' && typeof part.value === 'string')
    return { ...part, value: stack.modelText(part.value) } as T
  return output
}
