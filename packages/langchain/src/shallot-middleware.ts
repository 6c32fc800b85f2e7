import { AIMessage, ToolMessage } from '@langchain/core/messages'
import {
  type AnyTool,
  createRun,
  isLayer,
  type LayerEntry,
  LoopError,
  type ModelMiddleware,
  type MutableRun,
  modelSideOf,
  parseOptions,
  type Stack,
  type StackEvent,
  silentLogger,
  systemClock,
  TOOL_EFFECTS,
  type ToolResult,
} from '@shallot/core'
import { approvalCheckOf, maxStepsFrom, onlyWithoutStack, runBudgetRefinement, stackFromSource, stackSourceShape } from '@shallot/core/kit'
import { type AgentMiddleware, createMiddleware, type ModelRequest, type ToolCallRequest } from 'langchain'
import { z } from 'zod'
import { interruptForApprovals } from './approval-interrupt.js'
import { type HandlerResult, handlerCall } from './handler-call.js'
import { surfaceMalformedCalls } from './malformed-tool-calls.js'
import { markErrorResults, speaksAnthropic } from './mark-error-results.js'
import { callThroughOnion, composeModelLayers, modelCallLayers, type OnionCallEnv } from './model-call-policy.js'
import { modelToolTextOf } from './model-tool-text.js'
import { newTurnLedger, observeCompletedTurn, type TurnLedger } from './observe-turns.js'
import { type LangChainTool, reconcileSchema, toShallotTool } from './to-shallot-tool.js'

const custom = <T>(what: string, check: (v: unknown) => boolean) => z.custom<T>(check, { message: `must be ${what}` })
const isObject = (v: unknown) => typeof v === 'object' && v !== null
const isFunction = (v: unknown) => typeof v === 'function'
const isModelEntry = (v: unknown) => isFunction(v) || (isLayer(v) && isFunction(v.wrapModelCall))

/** Options of {@link shallotMiddleware}. */
export const shallotMiddlewareOptionsSchema = z
  .strictObject({
    /**
     * `middleware` (and clock, random, logger, limits, renderError): the layers to put in front of every
     * tool call, outermost first; or `stack`: a ready stack whose tools were made with `toShallotTool`.
     */
    ...stackSourceShape,
    /** What repeating each tool does to the world; tools not listed are `write` (never repeated unless safe). */
    effects: z.record(z.string(), z.enum(TOOL_EFFECTS)).default({}),
    /** `reconcile` per tool name, for writes whose outcome may be unknown (see `defineTool`); needs `idempotency()` in the middleware. */
    reconcile: z.record(z.string(), reconcileSchema).default({}),
    /** Which shallot run a call belongs to. Default: the thread id, else the id of the conversation's first message. */
    runKey: custom<(request: ToolCallRequest) => string>('a function (request) => string', isFunction).optional(),
    /** Deprecated: use `limits: { maxSteps }` (kept for one minor version). */
    maxSteps: z.number().int().positive().optional(),
    /** Runs kept; the least recently used is forgotten. Default 1000. */
    maxRuns: z.number().int().min(1).default(1000),
    /** Called with every event of every call (the stack is rebuilt as tools appear, so subscribe here). */
    onEvent: custom<(event: StackEvent) => void>('a function (event) => void', isFunction).optional(),
    /**
     * Deadline and backoff of every model call: `timeoutMs` per attempt (the request is aborted),
     * `maxAttempts` counting the first, full-jitter backoff from `baseMs` capped at `capMs`, never
     * shorter than the server's `Retry-After` (up to `maxRetryAfterMs`; a longer one is not waited for).
     * The retry fields go to the retry layer of `defaultModelMiddleware()` from `shallot`, the default model stack.
     */
    modelCall: z
      .strictObject({
        timeoutMs: z.number().positive().max(3_600_000).default(60_000),
        maxAttempts: z.number().int().min(1).max(10).optional(),
        baseMs: z.number().nonnegative().max(60_000).optional(),
        capMs: z.number().nonnegative().max(300_000).optional(),
        maxRetryAfterMs: z.number().nonnegative().max(3_600_000).optional(),
      })
      .default({ timeoutMs: 60_000 }),
    /**
     * The model layers every model call goes through, outermost first (`retry()`, `errorClassifier()`,
     * `circuitBreaker()`, your own), as `createAgent({ modelMiddleware })` takes them: layers with a model
     * side, or model middleware functions. Default: `defaultModelMiddleware()` with `modelCall`'s retry fields. `modelCall.timeoutMs`
     * stays the deadline of each attempt.
     */
    modelMiddleware: custom<LayerEntry<ModelMiddleware> | readonly LayerEntry<ModelMiddleware>[]>(
      'a layer with a model side (e.g. retry()), a model middleware (ctx, next) => Promise<void>, or an array of them',
      (v) => isModelEntry(v) || (Array.isArray(v) && v.every(isModelEntry)),
    ).optional(),
  })
  .superRefine(onlyWithoutStack(['onEvent']))
  .superRefine(retryOnlyOnce)
  .superRefine(runBudgetRefinement)

export type ShallotMiddlewareOptions = z.input<typeof shallotMiddlewareOptionsSchema>

const RETRY_FIELDS = ['maxAttempts', 'baseMs', 'capMs', 'maxRetryAfterMs'] as const

/** With `modelMiddleware` the layers decide: `modelCall`'s retry fields would be a second retry loop, so they are refused. */
function retryOnlyOnce(options: { modelCall: Record<string, unknown>; modelMiddleware?: unknown }, issues: z.RefinementCtx): void {
  if (options.modelMiddleware === undefined) return
  for (const field of RETRY_FIELDS) {
    if (options.modelCall[field] === undefined) continue
    issues.addIssue({
      code: 'custom',
      path: ['modelCall', field],
      message: 'belongs to the retry layer; with modelMiddleware, give it to retry() there (only timeoutMs stays here)',
    })
  }
}

/** The model onion: the layers given, else the default model stack with `modelCall`'s retry fields. */
function modelLayersOf(o: z.output<typeof shallotMiddlewareOptionsSchema>): ModelMiddleware[] {
  const given = o.modelMiddleware
  if (given !== undefined)
    return Array.isArray(given)
      ? given.map((entry, i) => modelSideOf(entry, `modelMiddleware[${i}]`))
      : [modelSideOf(given, 'modelMiddleware')]
  return modelCallLayers(o.modelCall)
}

const isClientTool = (tool: unknown): tool is LangChainTool =>
  isObject(tool) && typeof (tool as LangChainTool).name === 'string' && isFunction((tool as LangChainTool).invoke)

function defaultRunKey(request: ToolCallRequest): string {
  const thread = request.runtime.configurable?.thread_id
  if (typeof thread === 'string' && thread !== '') return thread
  const first = request.state.messages[0]?.id
  return typeof first === 'string' && first !== '' ? first : 'default'
}

/** A message's text parts as the model may read them (`stack.modelText`); other parts as they are. */
function checkedContent(stack: Stack, content: ToolMessage['content']): ToolMessage['content'] {
  if (typeof content === 'string') return stack.modelText(content)
  if (!Array.isArray(content)) return content
  return content.map((part) =>
    isObject(part) && (part as { type?: unknown }).type === 'text' && typeof (part as { text?: unknown }).text === 'string'
      ? { ...part, text: stack.modelText((part as { text: string }).text) }
      : part,
  ) as ToolMessage['content']
}

/** The tool message the model reads of a successful call: its text is the stack's, as `createAgent` sends it. */
function toolMessageOf(value: unknown, request: ToolCallRequest, stack: Stack): HandlerResult {
  const { id, name } = request.toolCall
  const callId = id ?? ''
  if (ToolMessage.isInstance(value)) {
    // Rebuilt with the text the stack checked, and this call's id: a replayed result (idempotency) carries the
    // tool_call_id of the call that first produced it.
    return new ToolMessage({
      content: checkedContent(stack, value.content),
      tool_call_id: callId,
      name,
      status: value.status ?? 'success',
      artifact: value.artifact,
    })
  }
  if (isObject(value) && (value as { lg_name?: unknown }).lg_name === 'Command') return value as HandlerResult
  const content = stack.modelText(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''))
  return new ToolMessage({ content, tool_call_id: callId, name })
}

/** How events and logs name a LangChain chat model: its `model` id (`claude-sonnet-4-5`), else its type. */
function modelNameOf(model: unknown): string {
  const id = isObject(model) ? (model as { model?: unknown; _llmType?: unknown }).model : undefined
  if (typeof id === 'string' && id !== '') return id
  return 'langchain'
}

/**
 * The stack of the tools the agent has shown so far: `register` adds a LangChain tool (the stack is rebuilt on
 * next use when one is new), `stack()` is the ready stack given, or the one built from the options.
 */
function toolStack(o: z.output<typeof shallotMiddlewareOptionsSchema>): { register(source: LangChainTool): void; stack(): Stack } {
  const registry = new Map<string, { source: LangChainTool; tool: AnyTool }>()
  let built: Stack | undefined = o.stack
  return {
    register(source) {
      if (o.stack !== undefined || registry.get(source.name)?.source === source) return
      const effect = o.effects[source.name]
      const reconcile = o.reconcile[source.name]
      const options = { ...(effect === undefined ? {} : { effect }), ...(reconcile === undefined ? {} : { reconcile }) }
      registry.set(source.name, { source, tool: toShallotTool(source, options) })
      built = undefined
    },
    stack() {
      if (built !== undefined) return built
      const next = stackFromSource(
        o,
        [...registry.values()].map((entry) => entry.tool),
      )
      if (o.onEvent !== undefined) next.on(o.onEvent)
      built = next
      return next
    },
  }
}

type ModelEnv = Omit<OnionCallEnv, 'run' | 'model' | 'parent'> & { toolText: (tools: ModelRequest['tools']) => ModelRequest['tools'] }

/**
 * One model call of a thread, through the model onion: the request as the model reads it (error results
 * marked `is_error` for Anthropic, the tools' text cleaned and capped), each attempt bound to its signal.
 */
function askModel(request: ModelRequest, handler: (request: ModelRequest) => unknown, env: ModelEnv, run: MutableRun): Promise<unknown> {
  const messages = speaksAnthropic(request.model) ? markErrorResults(request.messages) : request.messages
  const withSignal = (request.model as { withConfig?: unknown }).withConfig
  const { toolText, ...onion } = env
  return callThroughOnion(
    (signal) =>
      Promise.resolve(
        handler({
          ...request,
          messages,
          // What the model reads of each tool, cleaned and capped (a third-party tool's text comes through here raw).
          tools: toolText(request.tools),
          // The handler takes no signal; a model bound to one is how the deadline aborts the request.
          ...(typeof withSignal === 'function' ? { model: withSignal.call(request.model, { signal }) } : {}),
        }),
      ),
    { ...onion, run, model: modelNameOf(request.model), parent: request.runtime.signal },
  )
}

/** Per thread: its run, the argument text of its last model turn's malformed calls by call id, and its turns. */
type ThreadRun = { run: MutableRun; stop: AbortController; malformed: Map<string, string>; ledger: TurnLedger }
type ThreadRuns = Map<string, ThreadRun>

/** The thread's run (made on first use), now the most recently used; past `maxRuns`, the least recently used is forgotten. */
function threadRun(runs: ThreadRuns, key: string, maxSteps: number | undefined, maxRuns: number): ThreadRun {
  let entry = runs.get(key)
  if (entry !== undefined) {
    runs.delete(key)
  } else {
    const stop = new AbortController()
    const run = createRun({ id: key, signal: stop.signal, ...(maxSteps === undefined ? {} : { maxSteps }) })
    entry = { run, stop, malformed: new Map<string, string>(), ledger: newTurnLedger() }
    if (runs.size >= maxRuns) runs.delete(runs.keys().next().value as string)
  }
  runs.set(key, entry)
  return entry
}

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
  const modelEnv: ModelEnv = {
    onion: composeModelLayers(modelLayersOf(o)),
    timeoutMs: o.modelCall.timeoutMs,
    clock: o.clock ?? systemClock,
    random: o.random ?? Math.random,
    log: o.logger ?? silentLogger,
    toolText: modelToolTextOf(isClientTool),
  }
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
      const response = await askModel(request, handler as (request: ModelRequest) => unknown, modelEnv, thread.run)
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
