import { AIMessage, ToolMessage } from '@langchain/core/messages'
import { LoopError, parseOptions, type ToolResult } from '@shallot/core'
import { approvalCheckOf, maxStepsFrom } from '@shallot/core/kit'
import { type AgentMiddleware, createMiddleware, type ModelRequest, type ToolCallRequest } from 'langchain'
import { modelCallHost } from 'shallot'
import { interruptForApprovals } from './approval-interrupt.js'
import { handlerCall } from './handler-call.js'
import { surfaceMalformedCalls } from './malformed-tool-calls.js'
import { askModel, modelLayersOf } from './model-call-policy.js'
import { modelToolTextOf } from './model-tool-text.js'
import { observeCompletedTurn } from './observe-turns.js'
import { type ShallotMiddlewareOptions, shallotMiddlewareOptionsSchema } from './shallot-middleware-options.js'
import { defaultRunKey, type ThreadRun, type ThreadRuns, threadRun } from './thread-runs.js'
import type { LangChainTool } from './to-shallot-tool.js'
import { toolMessageOf, toolStack } from './tool-stack.js'

const isClientTool = (tool: unknown): tool is LangChainTool =>
  typeof tool === 'object' &&
  tool !== null &&
  typeof (tool as LangChainTool).name === 'string' &&
  typeof (tool as LangChainTool).invoke === 'function'

/**
 * A LangChain agent middleware that runs every tool call through a shallot stack: one line gives a
 * `createAgent` user shallot's layers. Soft errors come back as `ToolMessage`s with `status: 'error'`
 * (the stack's rendering as content) that the model reads; a hard error (`LoopError`) stops the agent:
 * `agent.invoke()` rejects (LangChain wraps it: use {@link loopErrorOf}) and sibling calls are cancelled.
 * Arguments are validated by the stack with the tool's own schema before LangChain runs the tool.
 *
 * @example
 * const agent = createAgent({
 *   model, tools: [search, readFile],
 *   middleware: [shallotMiddleware({ middleware: [circuitBreaker(), retry()], effects: { search: 'read' } })],
 * })
 */
export function shallotMiddleware(options?: ShallotMiddlewareOptions): AgentMiddleware {
  const o = parseOptions('shallotMiddleware()', shallotMiddlewareOptionsSchema, options)
  // Per thread: its run, and the argument text of its last model turn's calls that were not complete
  // JSON, by call id, from that turn to their dispatch. Kept with the run, so two threads whose calls
  // got the same id (`malformed_0`) never read each other's text, and forgotten with it.
  const runs: ThreadRuns = new Map()
  const runKey = o.runKey ?? defaultRunKey
  const maxSteps = maxStepsFrom(o)
  // Every model call goes through one onion of model layers: by default the default model stack, as createAgent lists it.
  const host = modelCallHost({
    modelMiddleware: modelLayersOf(o),
    ...(o.clock === undefined ? {} : { clock: o.clock }),
    ...(o.random === undefined ? {} : { random: o.random }),
    ...(o.logger === undefined ? {} : { log: o.logger }),
    ...(o.onModelEvent === undefined ? {} : { onEvent: o.onModelEvent }),
  })
  const toolText = modelToolTextOf(isClientTool)
  const { register, stack } = toolStack(o)
  // The policy's question "will this call wait for a person?", asked after each model turn.
  const check = o.stack === undefined ? approvalCheckOf(o.middleware) : undefined

  const runFor = (key: string) => threadRun(runs, key, maxSteps, o.maxRuns)

  /** The thread's run is over: its other calls are cancelled, and its next invocation starts afresh. */
  function endThread(key: string, thread: ThreadRun, hard: LoopError): LoopError {
    thread.stop.abort(hard)
    if (runs.get(key)?.run === thread.run) runs.delete(key)
    return hard
  }

  /** The thread of a model call: `runKey` asked as for the tool calls of the conversation's last reply. */
  function modelRunKey(request: ModelRequest): string {
    const last = request.state.messages.at(-1)
    const toolCall = AIMessage.isInstance(last) ? last.tool_calls?.[0] : undefined
    return runKey({ state: request.state, runtime: request.runtime, toolCall } as unknown as ToolCallRequest)
  }

  /**
   * The model's message with its malformed calls surfaced, their text noted for the thread's dispatch.
   * A model turn replaces the thread's notes: the previous turn's calls have all been dispatched (or
   * never will be), so nothing accumulates.
   */
  function surfaceFor(request: ModelRequest, message: AIMessage): AIMessage {
    const noted = new Map<string, string>()
    const surfaced = surfaceMalformedCalls(message, (id, raw) => noted.set(id, raw))
    const key = runKey({ state: request.state, runtime: request.runtime, toolCall: surfaced.tool_calls?.[0] } as unknown as ToolCallRequest)
    const entry = noted.size > 0 ? runFor(key) : runs.get(key)
    if (entry !== undefined) entry.malformed = noted
    return surfaced
  }

  return createMiddleware({
    name: 'shallot',
    async wrapModelCall(request, handler) {
      for (const tool of request.tools) if (isClientTool(tool)) register(tool)
      const key = modelRunKey(request)
      const thread = runFor(key)
      // The turn whose calls all settled is shown to the layers that watch turns (convergence), as createAgent does.
      if (thread.ledger.settled.size > 0) {
        try {
          observeCompletedTurn(stack(), thread.run, thread.ledger, request.state.messages)
        } catch (err) {
          throw endThread(key, thread, LoopError.is(err) ? err : new LoopError('tool_crashed', String(err), { cause: err }))
        }
      }
      const response = await askModel(request, handler as (request: ModelRequest) => unknown, { host, run: thread.run, toolText })
      return (AIMessage.isInstance(response) ? surfaceFor(request, response) : response) as never
    },
    ...(check === undefined
      ? {}
      : {
          async afterModel(state, runtime) {
            const messages = state.messages
            const last = messages.at(-1)
            if (!AIMessage.isInstance(last) || (last.tool_calls?.length ?? 0) === 0) return undefined
            const key = runKey({ state, runtime, toolCall: last.tool_calls?.[0] } as unknown as ToolCallRequest)
            await interruptForApprovals(messages, check, stack(), runFor(key).run)
            return undefined
          },
        }),
    async wrapToolCall(request, handler) {
      if (isClientTool(request.tool)) register(request.tool)
      const key = runKey(request as ToolCallRequest)
      const thread = runFor(key)
      const { run, malformed, ledger } = thread
      const { toolCall } = request
      const signal = request.runtime.signal
      const id = toolCall.id ?? ''
      const bad = malformed.get(id)
      let result: ToolResult
      try {
        result = await handlerCall.run({ request: request as ToolCallRequest, handler: handler as never }, () =>
          stack().dispatch(
            // The text the model sent: core's argument guard refuses it before any layer or tool sees it.
            { id, name: toolCall.name, args: bad ?? toolCall.args },
            signal === undefined ? { run } : { run, signal },
          ),
        )
      } catch (err) {
        throw endThread(
          key,
          thread,
          LoopError.is(err) ? err : new LoopError('tool_crashed', `${toolCall.name}: ${String(err)}`, { cause: err }),
        )
      } finally {
        malformed.delete(id)
      }
      ledger.settled.set(id, { call: { id, name: toolCall.name, args: bad ?? toolCall.args }, result })
      if (result.ok) return toolMessageOf(result.value, request as ToolCallRequest, stack()) as never
      return new ToolMessage({ content: result.content, tool_call_id: toolCall.id ?? '', name: toolCall.name, status: 'error' })
    },
  })
}
