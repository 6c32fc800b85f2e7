import { AsyncLocalStorage } from 'node:async_hooks'
import type { Tool } from 'ai'

/**
 * The AI SDK's execution options of the call being dispatched. A tool's `execute` in a shallot
 * stack receives shallot's own context (`{ call, signal, idempotencyKey, attempt, log }`), not the
 * SDK's, so the wrapper parks the SDK's options here for the converted tool to hand on whole (`toolCallId`, `messages`, and the context:
 * `experimental_context` in ai 6, `context` and `experimental_sandbox` in ai 7).
 */
export const sdkCall = new AsyncLocalStorage<SdkExecutionOptions>()

/** `ToolExecutionOptions` of the installed major (ai 7 made it generic over the context). */
export type SdkExecutionOptions = Parameters<NonNullable<Tool['execute']>>[1]
