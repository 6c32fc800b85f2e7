import { AsyncLocalStorage } from 'node:async_hooks'
import type { ToolMessage } from '@langchain/core/messages'
import type { ToolCallHandler, ToolCallRequest } from 'langchain'

/** The LangChain call being dispatched: the request and the handler that runs the tool. */
export interface HandlerCall {
  readonly request: ToolCallRequest
  readonly handler: ToolCallHandler
}

/** What the handler answers: a ToolMessage, or a LangGraph Command. */
export type HandlerResult = Awaited<ReturnType<ToolCallHandler>> | ToolMessage

/**
 * The handler of the call being dispatched. A tool's `execute` in a shallot stack receives
 * shallot's own context (`{ call, signal, idempotencyKey, attempt, log }`), not LangChain's, so the
 * middleware parks LangChain's request and handler here for the converted tool to run.
 */
export const handlerCall = new AsyncLocalStorage<HandlerCall>()
