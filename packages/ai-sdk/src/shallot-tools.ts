import type { Tracer } from '@opentelemetry/api'
import type { RunReport } from '@shallot/agent'
import {
  createRun,
  LoopError,
  parseOptions,
  type RunContext,
  type Stack,
  TOOL_EFFECTS,
  type ToolEffect,
  type ToolResult,
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
import type {
  InferToolInput,
  InferToolOutput,
  LanguageModel,
  StopCondition,
  StreamTextTransform,
  Tool,
  ToolCallRepairFunction,
  ToolSet,
} from 'ai'
import { z } from 'zod'
import { generationReport } from './generation-report.js'
import { hardStopTransform } from './hard-stop-transform.js'
import { checkedOutput, modelOutput } from './model-output.js'
import { modelText } from './model-tool-text.js'
import { newStepLedger, observeLastStep } from './observe-steps.js'
import { repairMalformedInput } from './repair-tool-call.js'
import { type SdkExecutionOptions, sdkCall } from './sdk-call.js'
import { flagsToolErrors, softErrorOutput } from './soft-error-output.js'
import { softErrorTracer } from './soft-error-tracer.js'
import { isSoftFailure, type SoftFailure, softFailure } from './soft-failure.js'
import { type Reconcile, stackToolsOf } from './to-shallot-tool.js'
import {
  approvalResponse,
  approvedIn,
  needsApprovalOf,
  type ToolApprovalRequestPart,
  type ToolApprovalResponsePart,
} from './tool-approval.js'

const custom = <T>(what: string, check: (v: unknown) => boolean) => z.custom<T>(check, { message: `must be ${what}` })
const isObject = (v: unknown) => typeof v === 'object' && v !== null

/** Options of {@link shallotTools}. */
export const shallotToolsOptionsSchema = z
  .strictObject({
    /**
     * `stack`: a ready stack whose tools include every executable AI SDK tool by name (build it with
     * `toShallotTools`); or `middleware` (and clock, random, logger, limits, renderError) to build one.
     */
    ...stackSourceShape,
    /** What repeating each tool does to the world; tools not listed are `write` (never repeated unless safe). */
    effects: z.record(z.string(), z.enum(TOOL_EFFECTS)).optional(),
    /** `reconcile` per tool name, for writes whose outcome may be unknown (see `defineTool`); needs `idempotency()` in the middleware. */
    reconcile: z
      .record(
        z.string(),
        custom<Reconcile>('a function (args, context) => a reconcile answer', (v) => typeof v === 'function'),
      )
      .optional(),
    /** The run these calls belong to (its budget and per-run state). Default: a new run per `shallotTools()` call. */
    run: custom<RunContext>('a run from createRun()', (v) => isObject(v) && isObject((v as RunContext).budget)).optional(),
    /** Deprecated: use `limits: { maxSteps }` (kept for one minor version). */
    maxSteps: z.number().int().positive().optional(),
    /** Your cancellation: aborting it cancels every call in flight and the generation (through `abortSignal`). */
    signal: custom<AbortSignal>('an AbortSignal', (v) => v instanceof AbortSignal).optional(),
    /**
     * The model the tools are offered to (the one you pass `generateText`). The SDK does not tell a tool
     * which provider reads its result, so this does: a provider that flags a failed tool result on the
     * wire (Anthropic: `is_error: true`) gets the soft error flagged. Without it, a soft error is plain text.
     */
    model: custom<LanguageModel>(
      'an AI SDK language model (the one passed to generateText)',
      (v) => typeof v === 'string' || isObject(v),
    ).optional(),
    /** What the generation is asked, as the report of a stop names the task. Default: "an AI SDK generation". */
    task: z.string().max(100_000).optional(),
  })
  .superRefine(onlyWithoutStack(['effects', 'reconcile']))
  .superRefine(runBudgetRefinement)

export type ShallotToolsOptions = z.input<typeof shallotToolsOptionsSchema>

/** A wrapped tool: same input, and its output may be a {@link SoftFailure} instead of the tool's value. */
export type ShallotTool<T> = T extends Tool ? Tool<InferToolInput<T>, InferToolOutput<T> | SoftFailure> : T

/** The wrapped tools, by the same names. */
export type ShallotTools<T extends ToolSet> = { [K in keyof T]: ShallotTool<T[K]> }

/** What {@link shallotTools} returns: the wrapped tools and the hooks that carry hard stops and malformed calls. */
export interface ShallotToolSet<T extends ToolSet> {
  /** Pass as `generateText({ tools })` / `streamText({ tools })`. */
  readonly tools: ShallotTools<T>
  /**
   * Pass as `generateText({ abortSignal })`: a hard stop aborts it with the `LoopError`, and so does your `signal`.
   * With `streamText`, pass it only together with `streamTransform`, which turns that abort back into an error.
   */
  readonly abortSignal: AbortSignal
  /**
   * Add to `stopWhen`: throws the `LoopError` after the step that hit it, even if it was the last step. It also
   * shows each step with tool calls to the layers that watch turns (`stuckLoop({ convergence })`), as
   * `createAgent` shows its turns, and throws the `LoopError` such a layer ends the run with.
   */
  // biome-ignore lint/suspicious/noExplicitAny: like the SDK's own stepCountIs(), it fits every tool set
  readonly stopOnHardError: StopCondition<any>
  /**
   * Pass as `streamText({ experimental_transform })`: a hard stop becomes an `error` part (so `onError` runs and
   * the UI message stream sends `error`, not `abort`) and the stream and its promises reject with the `LoopError`.
   */
  // biome-ignore lint/suspicious/noExplicitAny: a transform that only reads error parts fits every tool set
  readonly streamTransform: StreamTextTransform<any>
  /**
   * Pass as `experimental_repairToolCall` (ai 7: `repairToolCall`): a call whose arguments are not valid JSON goes
   * through the stack and comes back as `invalid_arguments`, counted by stuck-loop, instead of the SDK's own answer.
   */
  // biome-ignore lint/suspicious/noExplicitAny: it repairs calls of any tool set and returns null for the rest
  readonly repairToolCall: ToolCallRepairFunction<any>
  /**
   * Wraps your OpenTelemetry tracer (ai 6: `experimental_telemetry: { tracer }`; ai 7: `new OpenTelemetry({ tracer })`)
   * so the tool-call span of a call that ended in a soft error has status ERROR and `shallot.error.code`.
   */
  tracer(tracer: Tracer): Tracer
  readonly stack: Stack
  readonly run: RunContext
  /** The `LoopError` that stopped the generation, once one did. */
  readonly error: LoopError | undefined
  /**
   * What a person reads of a stop, as `createAgent`'s outcome has it: the task, the completed steps and their calls,
   * what failed, why, and what to do next. Of `error` (what `generateText` threw: a model layer's stop too), else of
   * the set's own stop; undefined when neither is a `LoopError`.
   */
  report(error?: unknown): RunReport | undefined
  /**
   * Answers a `tool-approval-request` part (a call a policy's `approve` rule stopped, asked through
   * the SDK's `needsApproval`) with the `tool-approval-response` part to send back in a `tool`
   * message. `'approve'`: the next generation runs it once. `'deny'` / `{ deny: reason }`: it goes
   * through the stack as denied, never runs, and the model reads shallot's `denied_by_user`.
   */
  approvalResponse(request: ToolApprovalRequestPart, answer: 'approve' | 'deny' | { deny: string }): Promise<ToolApprovalResponsePart>
}

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> => typeof (value as { then?: unknown } | null)?.then === 'function'

/**
 * Puts a shallot stack in front of AI SDK tools. Every `execute` goes through the stack: a soft error
 * comes back as a tool result the model reads (the stack's text, as is; your code sees a
 * {@link SoftFailure}), a hard error (`LoopError`) stops the generation: `generateText` rejects with it.
 * Arguments are validated once, by the stack, so invalid ones are soft errors the layers see too.
 * Make one per generation: it holds the run (budget, per-run counters) and the hard-stop signal.
 *
 * Pass `model` (the one `generateText` gets) so a provider that flags failed tool results on the
 * wire (Anthropic's `is_error`) gets a soft error flagged.
 *
 * @example
 * const shallot = shallotTools({ read_file: readFile }, { model, middleware: [retry(), timeout({ ms: 5000 })], effects: { read_file: 'read' } })
 * const result = await generateText({
 *   model, prompt, tools: shallot.tools, abortSignal: shallot.abortSignal,
 *   stopWhen: [stepCountIs(10), shallot.stopOnHardError],
 * })
 */
export function shallotTools<T extends ToolSet>(tools: T, options?: ShallotToolsOptions): ShallotToolSet<T> {
  if (typeof tools !== 'object' || tools === null) throw new TypeError('shallotTools() takes a record of AI SDK tools { name: tool(...) }')
  const o = parseOptions('shallotTools()', shallotToolsOptionsSchema, options)
  const stack =
    o.stack ??
    stackFromSource(
      o,
      stackToolsOf(tools, {
        ...(o.effects === undefined ? {} : { effects: o.effects as Record<string, ToolEffect> }),
        ...(o.reconcile === undefined ? {} : { reconcile: o.reconcile }),
      }),
    )
  for (const [name, sdkTool] of Object.entries(tools)) {
    if (typeof sdkTool.execute === 'function' && !stack.tools.has(name)) {
      throw new TypeError(
        `shallotTools(): the stack has no tool named "${name}"; build it with createStack({ tools: toShallotTools(tools) })`,
      )
    }
  }
  const maxSteps = maxStepsFrom(o)
  const run = o.run ?? createRun(maxSteps === undefined ? {} : { maxSteps })
  const flagErrors = flagsToolErrors(o.model)
  const stopper = new AbortController()
  const abortSignal = o.signal === undefined ? stopper.signal : AbortSignal.any([o.signal, stopper.signal])
  let error: LoopError | undefined
  // The policy's question "will this call wait for a person?", asked through the SDK's own needsApproval.
  const check = o.stack === undefined ? approvalCheckOf(o.middleware) : undefined
  // Filled only once a tracer is wrapped, and emptied as each tool-call span ends.
  let softFailures: Map<string, SoftFailure> | undefined
  // The calls of the current step that settled, shown with the step to the layers that watch turns.
  const ledger = newStepLedger()

  const stop = (hard: LoopError) => {
    if (error !== undefined) return
    error = hard
    stopper.abort(hard)
  }

  function wrap(name: string, sdkTool: Tool): Tool {
    const original = sdkTool.toModelOutput
    return {
      ...sdkTool,
      ...(check === undefined ? {} : { needsApproval: needsApprovalOf(name, sdkTool.needsApproval, check, stack, run) }),
      // What the model reads of the tool, cleaned and capped (an MCP server's tools come through here raw).
      ...modelText(sdkTool),
      async execute(input: unknown, sdkOptions: SdkExecutionOptions) {
        if (error !== undefined) throw error
        const signal = sdkOptions.abortSignal === undefined ? abortSignal : AbortSignal.any([sdkOptions.abortSignal, abortSignal])
        // Executed after the SDK's approval step: the person's yes (in the messages, which the host keeps) goes to the policy.
        const definition = check === undefined ? undefined : stack.tools.get(name)
        if (
          check !== undefined &&
          definition !== undefined &&
          approvedIn(sdkOptions.messages, sdkOptions.toolCallId) &&
          (await check({ id: sdkOptions.toolCallId, name, args: input }, run, definition))
        )
          putApproval(run, { id: sdkOptions.toolCallId, name, args: input }, 'approve')
        let result: ToolResult
        try {
          result = await sdkCall.run(sdkOptions, () => stack.dispatch({ id: sdkOptions.toolCallId, name, args: input }, { run, signal }))
        } catch (err) {
          const hard = LoopError.is(err)
            ? err
            : new LoopError('tool_crashed', `${name}: ${String(err)}`, { cause: err, details: { tool: name } })
          stop(hard)
          throw hard
        }
        ledger.settled.set(sdkOptions.toolCallId, { call: { id: sdkOptions.toolCallId, name, args: input }, result })
        if (result.ok) return result.value
        const failure = softFailure(result)
        softFailures?.set(sdkOptions.toolCallId, failure)
        return failure
      },
      toModelOutput(output) {
        // The SDK does not say which provider reads this: the model option does, else the output every provider sends as is.
        if (isSoftFailure(output.output)) return softErrorOutput(output.output.content, flagErrors)
        if (original === undefined) return modelOutput(stack, output.output)
        const own = original(output)
        return isPromiseLike(own) ? Promise.resolve(own).then((o) => checkedOutput(stack, o)) : checkedOutput(stack, own)
      },
    } as Tool
  }

  const wrapped: Record<string, Tool> = {}
  for (const [name, sdkTool] of Object.entries(tools)) {
    wrapped[name] = typeof sdkTool.execute === 'function' ? wrap(name, sdkTool as Tool) : (sdkTool as Tool)
  }

  return {
    tools: wrapped as ShallotTools<T>,
    abortSignal,
    stopOnHardError: ({ steps }) => {
      if (error !== undefined) throw error
      try {
        observeLastStep(stack, run, ledger, steps)
      } catch (err) {
        // Only a LoopError gets here (the stack logs any other throw of a layer): it ends the generation.
        stop(LoopError.is(err) ? err : new LoopError('tool_crashed', String(err), { cause: err }))
        throw error
      }
      return false
    },
    streamTransform: hardStopTransform(() => error),
    repairToolCall: repairMalformedInput(new Set(Object.keys(wrapped).filter((name) => wrapped[name] !== tools[name]))),
    tracer(tracer: Tracer) {
      softFailures ??= new Map()
      return softErrorTracer(tracer, softFailures)
    },
    stack,
    run,
    get error() {
      return error
    },
    report(given?: unknown) {
      const stopped = LoopError.is(given) ? given : error
      return stopped === undefined ? undefined : generationReport(run.id, o.task ?? 'an AI SDK generation', ledger.records, stopped)
    },
    approvalResponse: (request, answer) => approvalResponse(request, answer, { stack, run, signal: abortSignal, check }),
  }
}
