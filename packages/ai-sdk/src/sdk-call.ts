import { AsyncLocalStorage } from 'node:async_hooks'
import type { ToolExecutionOptions } from 'ai'

/**
 * The AI SDK's execution options of the call being dispatched. A tool's `execute` in a shallot
 * stack only receives `{ signal, idempotencyKey, attempt, log }`, so the wrapper parks the SDK's
 * options here for the converted tool to hand on (`toolCallId`, `messages`, `experimental_context`).
 */
export const sdkCall = new AsyncLocalStorage<ToolExecutionOptions>()
