import {
  type RunContext as AgentsRunContext,
  type CallModelInputFilter,
  type FunctionTool,
  type ToolErrorFormatter,
  tool,
} from '@openai/agents'
import {
  type AnyTool,
  createRun,
  LoopError,
  parseOptions,
  type RunContext,
  type Stack,
  type ToolErrorJSON,
  toolDescription,
} from '@shallot/core'
import {
  approvalCheckOf,
  maxStepsFrom,
  onlyWithoutStack,
  putApproval,
  runBudgetRefinement,
  stackFromSource,
  stackSourceShape,
} from '@shallot/core/kit'
import { z } from 'zod'
import { agentsCall, definitionsOf, type FunctionToolSource, jsonOr, parametersOf } from './function-tool-specs.js'
import { newTurnLedger, observeCompletedTurn, type TurnLedger } from './observe-turns.js'

const custom = <T>(what: string, check: (v: unknown) => boolean) => z.custom<T>(check, { message: `must be ${what}` })
const isObject = (v: unknown) => typeof v === 'object' && v !== null

/** Options of {@link shallotFunctionTools}. */
export const shallotFunctionToolsOptionsSchema = z
  .strictObject({
    ...stackSourceShape,
    /** The run these calls belong to (its budget and per-run state). Default: a new run. */
    run: custom<RunContext>('a run from createRun()', (v) => isObject(v) && isObject((v as RunContext).budget)).optional(),
    /** Deprecated: use `limits: { maxSteps }` (kept for one minor version). */
    maxSteps: z.number().int().positive().optional(),
    /** Your cancellation: aborting it cancels every call in flight. */
    signal: custom<AbortSignal>('an AbortSignal', (v) => v instanceof AbortSignal).optional(),
  })
  .superRefine(runBudgetRefinement)

export type ShallotFunctionToolsOptions = z.input<typeof shallotFunctionToolsOptionsSchema>

/** What {@link shallotFunctionTools} returns. */
export interface ShallotFunctionToolSet {
  /** Pass as `new Agent({ tools })`. */
  readonly tools: FunctionTool[]
  /**
   * Pass as `run(agent, input, { signal })`: a hard stop aborts it with the `LoopError` (sibling calls of the turn
   * are cancelled), and so does your `signal`.
   */
  readonly signal: AbortSignal
  /** The soft errors the model read, in order (code, message, …). */
  readonly softErrors: readonly ToolErrorJSON[]
  readonly stack: Stack
  readonly run: RunContext
  /** The `LoopError` that stopped the run, once one did. */
  readonly error: LoopError | undefined
  /**
   * Pass as `run(agent, state, { toolErrorFormatter })` when a policy asks for approval: a call the
   * person rejected (`state.reject(item)`) goes through the stack as denied, so the model reads
   * shallot's `denied_by_user` (with the `message` of `state.reject(item, { message })` when given,
   * which the SDK sends as it is). Other messages are the SDK's own.
   */
  readonly toolErrorFormatter: ToolErrorFormatter
  /**
   * Pass as `run(agent, input, { callModelInputFilter })`: before each model call it shows the turn that just
   * completed (the model's text, its calls, their results) to the layers that watch turns, as `createAgent`
   * does, so `stuckLoop({ convergence })` stops a model that keeps repeating itself; `run()` rejects with the
   * `LoopError`. The model input goes on unchanged (with a filter of your own, call it on what this returns).
   */
  readonly callModelInputFilter: CallModelInputFilter
}

/**
 * The `callModelInputFilter` of a set: before each model call, the turn that completed is shown to the layers
 * that watch turns; a `LoopError` from them stops the set (its `signal` aborts) and is thrown; the input goes on as it is.
 */
function turnFilter(
  stack: Stack,
  run: RunContext,
  ledger: TurnLedger,
  set: { stopped(): LoopError | undefined; stop(hard: LoopError): void },
): CallModelInputFilter {
  return ({ modelData }) => {
    const stopped = set.stopped()
    if (stopped !== undefined) throw stopped
    try {
      observeCompletedTurn(stack, run, ledger, modelData.input)
    } catch (err) {
      // Only a LoopError gets here (the stack logs any other throw of a layer): it ends the run.
      const hard = LoopError.is(err) ? err : new LoopError('tool_crashed', String(err), { cause: err })
      set.stop(hard)
      throw hard
    }
    return modelData
  }
}

/**
 * Builds OpenAI Agents SDK function tools whose every call goes through a shallot stack. The raw
 * argument text goes to `stack.dispatch` (which parses and validates it, so malformed JSON is a soft
 * `invalid_arguments` that stuck-loop counts); a soft error is the tool output the model reads; a hard
 * error (`LoopError`) aborts `signal` and is rethrown, so `run()` rejects with the `LoopError` itself.
 *
 * @example
 * const shallot = shallotFunctionTools([readFile], { middleware: defaultMiddleware(), limits: { maxSteps: 20 } })
 * const agent = new Agent({ name: 'coder', instructions, model, tools: shallot.tools })
 * const result = await run(agent, 'What does src/main.rs do?', { signal: shallot.signal, maxTurns: 20 })
 */
export function shallotFunctionTools(specs: readonly FunctionToolSource[], options?: ShallotFunctionToolsOptions): ShallotFunctionToolSet {
  if (!Array.isArray(specs))
    throw new TypeError('shallotFunctionTools() takes an array of tool specs [{ name, description, parameters, execute }]')
  const o = parseOptions('shallotFunctionTools()', shallotFunctionToolsOptionsSchema.superRefine(onlyWithoutStack([])), options)
  const definitions = definitionsOf(specs)
  const stack = o.stack ?? stackFromSource(o, definitions)
  const maxSteps = maxStepsFrom(o)
  const run = o.run ?? createRun(maxSteps === undefined ? {} : { maxSteps })
  const stopper = new AbortController()
  const signal = o.signal === undefined ? stopper.signal : AbortSignal.any([o.signal, stopper.signal])
  const softErrors: ToolErrorJSON[] = []
  let error: LoopError | undefined
  // The policy's question "will this call wait for a person?", asked through the SDK's own needsApproval.
  const check = o.stack === undefined ? approvalCheckOf(o.middleware) : undefined
  // The arguments of calls the SDK was told need approval, so a rejection can go through the stack.
  const askedFor = new Map<string, { name: string; args: unknown }>()
  // The calls of the current turn that settled, shown with the turn to the layers that watch turns.
  const ledger = newTurnLedger()

  const toolErrorFormatter: ToolErrorFormatter = async (args) => {
    const asked = args.kind === 'approval_rejected' ? askedFor.get(args.callId) : undefined
    if (asked === undefined) return undefined
    askedFor.delete(args.callId)
    putApproval(run, { id: args.callId, ...asked }, 'deny')
    try {
      const result = await stack.dispatch({ id: args.callId, ...asked }, { run, signal })
      if (!result.ok && result.error !== undefined) softErrors.push(result.error)
      return result.content
    } catch (err) {
      if (LoopError.is(err) && error === undefined) {
        error = err
        stopper.abort(err)
      }
      return undefined
    }
  }

  function functionTool(spec: AnyTool): FunctionTool {
    // The SDK's own tool() for everything but invoke (approval policy, enablement, tracing fields); its
    // invoke would parse and validate the arguments itself and answer failures with its own text.
    const base = tool({
      name: spec.name,
      description: toolDescription(spec.description),
      parameters: parametersOf(spec.input),
      strict: false,
      ...(check === undefined
        ? {}
        : {
            needsApproval: async (_context: AgentsRunContext, input: unknown, callId?: string) => {
              const definition = stack.tools.get(spec.name)
              if (definition === undefined || callId === undefined) return false
              const needed = await check({ id: callId, name: spec.name, args: input }, run, definition)
              if (needed) askedFor.set(callId, { name: spec.name, args: input })
              return needed
            },
          }),
      execute: () => {
        throw new LoopError('tool_crashed', `${spec.name}: the SDK's own invoke ran instead of the shallot stack`)
      },
    } as Parameters<typeof tool>[0])
    return {
      ...base,
      async invoke(runContext: AgentsRunContext, input: string, details?: { toolCall?: { callId?: string }; signal?: AbortSignal }) {
        if (error !== undefined) throw error
        const callSignal = details?.signal === undefined ? signal : AbortSignal.any([details.signal, signal])
        const callId = details?.toolCall?.callId ?? ''
        // Invoked after the SDK's approval step: the person's yes (in the SDK's state, which it serializes) goes to the policy.
        if (check !== undefined && runContext.isToolApproved({ toolName: spec.name, callId }) === true) {
          askedFor.delete(callId)
          const definition = stack.tools.get(spec.name)
          // Only a call the policy still stops takes the yes ("always approve" covers calls the policy lets through anyway).
          if (definition !== undefined && (await check({ id: callId, name: spec.name, args: jsonOr(input) }, run, definition)))
            putApproval(run, { id: callId, name: spec.name, args: input }, 'approve')
        }
        try {
          const call = { id: callId, name: spec.name, args: input }
          const result = await agentsCall.run(runContext, () => stack.dispatch(call, { run, signal: callSignal }))
          ledger.settled.set(callId, { call, result })
          if (!result.ok && result.error !== undefined) softErrors.push(result.error)
          return result.content
        } catch (err) {
          const hard = LoopError.is(err)
            ? err
            : new LoopError('tool_crashed', `${spec.name}: ${String(err)}`, { cause: err, details: { tool: spec.name } })
          if (error === undefined) {
            error = hard
            stopper.abort(hard)
          }
          throw hard
        }
      },
    } as FunctionTool
  }

  return {
    tools: definitions.map(functionTool),
    signal,
    softErrors,
    stack,
    run,
    get error() {
      return error
    },
    toolErrorFormatter,
    callModelInputFilter: turnFilter(stack, run, ledger, {
      stopped: () => error,
      stop: (hard) => {
        error = hard
        stopper.abort(hard)
      },
    }),
  }
}
