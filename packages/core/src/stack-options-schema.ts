import { z } from 'zod'
import { isLayer, type LayerEntry } from './layer.js'
import type { ErrorRenderer } from './render.js'
import { createStack, type Stack, type StackLimits, type StackOptions } from './stack.js'
import type { Clock, Logger, Middleware } from './types.js'

const isObject = (v: unknown) => typeof v === 'object' && v !== null
const isFunction = (v: unknown) => typeof v === 'function'
const isToolEntry = (v: unknown) => isFunction(v) || (isLayer(v) && isFunction(v.wrapToolCall))
const custom = <T>(what: string, check: (v: unknown) => boolean) => z.custom<T>(check, { message: `must be ${what}` })

/** A host's limits: the stack's own, plus the step budget of the run the host creates. */
export interface HostLimits extends StackLimits {
  /** Step budget of each run the host creates: every tool attempt spends one; past it, `budget_exhausted`. */
  maxSteps?: number
}

/**
 * The zod fields of "either a ready stack, or what to build one from", for hosts that put a stack in
 * front of another framework's tools (the AI SDK, LangChain, the OpenAI Agents SDK). Spread it into a
 * schema and add {@link onlyWithoutStack} so parts given next to a ready stack are refused, not ignored;
 * build with {@link stackFromSource} and {@link maxStepsFrom}, so every host builds the same stack
 * (escalation, secrets and limits included) from the same words.
 *
 * @example
 * const schema = z.strictObject({ ...stackSourceShape, effects: z.record(z.string(), z.string()).optional() })
 *   .superRefine(onlyWithoutStack(['effects']))
 */
export const stackSourceShape = {
  /** A ready stack from `createStack()`. */
  stack: custom<Stack>('a stack from createStack()', (v) => isObject(v) && isFunction((v as Stack).dispatch)).optional(),
  /** The layers to build a stack from, outermost first: layers with a tool side (`retry()`) or middleware functions. */
  middleware: custom<LayerEntry<Middleware> | readonly LayerEntry<Middleware>[]>(
    'a layer with a tool side (e.g. retry()), a middleware, or an array of them',
    (v) => isToolEntry(v) || (Array.isArray(v) && v.every(isToolEntry)),
  ).optional(),
  clock: custom<Clock>('a Clock { now(), sleep(ms, signal) }', (v) => isObject(v) && isFunction((v as Clock).now)).optional(),
  random: custom<() => number>('a function () => number', isFunction).optional(),
  logger: custom<Logger>('a pino-compatible logger', (v) => isObject(v) && isFunction((v as Logger).child)).optional(),
  /** The stack's limits (`maxArgsBytes`, `maxArgsDepth`, `maxOutputChars`) and the run's `maxSteps`, as `createAgent` takes them. */
  limits: custom<HostLimits>('limits { maxSteps, maxArgsBytes, maxArgsDepth, maxOutputChars }', isObject).optional(),
  renderError: custom<ErrorRenderer>('a function (error, call) => string', isFunction).optional(),
  /** Whether a soft error of category `fatal` / `user` ends the run (`createStack({ escalate })`). Default: both do. */
  escalate: custom<StackOptions['escalate']>('{ fatal?: boolean, user?: boolean }', isObject).optional(),
  /** Your secrets, redacted from every text the model reads (`createStack({ secrets })`). */
  secrets: custom<StackOptions['secrets']>('an array of strings or RegExps', Array.isArray).optional(),
  /** Also redact secrets from successful output (`createStack({ redactOutput })`). */
  redactOutput: z.boolean().optional(),
}

/** What {@link stackSourceShape} parses to. */
export interface StackSource {
  stack?: Stack | undefined
  middleware?: LayerEntry<Middleware> | readonly LayerEntry<Middleware>[] | undefined
  clock?: Clock | undefined
  random?: (() => number) | undefined
  logger?: Logger | undefined
  limits?: HostLimits | undefined
  renderError?: ErrorRenderer | undefined
  escalate?: StackOptions['escalate'] | undefined
  secrets?: StackOptions['secrets'] | undefined
  redactOutput?: boolean | undefined
}

const BUILD_KEYS = ['middleware', 'clock', 'random', 'logger', 'renderError', 'escalate', 'secrets', 'redactOutput'] as const

/**
 * A zod refinement: with `stack` given, every part that only matters when building a stack (the
 * shape's own, plus `extraKeys`) is an error naming the option, never silently ignored. `limits.maxSteps`
 * belongs to the run, so it stays allowed.
 */
export function onlyWithoutStack(extraKeys: readonly string[] = []) {
  const keys = [...BUILD_KEYS, ...extraKeys]
  return (options: Record<string, unknown>, issues: z.RefinementCtx): void => {
    if (options.stack === undefined) return
    for (const key of keys) {
      if (options[key] !== undefined) {
        issues.addIssue({ code: 'custom', path: [key], message: 'belongs to the stack; with `stack`, set it where you built the stack' })
      }
    }
    const limits = options.limits
    if (isObject(limits)) {
      for (const key of Object.keys(limits as object)) {
        if (key === 'maxSteps') continue
        issues.addIssue({
          code: 'custom',
          path: ['limits', key],
          message: 'belongs to the stack; with `stack`, set it where you built the stack',
        })
      }
    }
  }
}

/**
 * The host's stack: the ready one, or one built from the source's parts around `tools`, so every host
 * passes the same options to `createStack` (the run's `limits.maxSteps` is left out: the run takes it).
 *
 * @example
 * const stack = stackFromSource(options, definitions)
 */
export function stackFromSource(source: StackSource, tools: StackOptions['tools']): Stack {
  if (source.stack !== undefined) return source.stack
  const options: StackOptions = { tools }
  if (source.middleware !== undefined) options.middleware = source.middleware
  if (source.clock !== undefined) options.clock = source.clock
  if (source.random !== undefined) options.random = source.random
  if (source.logger !== undefined) options.logger = source.logger
  if (source.renderError !== undefined) options.renderError = source.renderError
  if (source.escalate !== undefined) options.escalate = source.escalate
  if (source.secrets !== undefined) options.secrets = source.secrets
  if (source.redactOutput !== undefined) options.redactOutput = source.redactOutput
  if (source.limits !== undefined) {
    const { maxSteps: _runs, ...stackLimits } = source.limits
    options.limits = stackLimits
  }
  return createStack(options)
}

/**
 * The step budget of the runs a host creates: `limits.maxSteps`, or the deprecated top-level `maxSteps`
 * (kept for one minor version). Undefined when neither is given.
 */
export function maxStepsFrom(options: { limits?: HostLimits | undefined; maxSteps?: number | undefined }): number | undefined {
  return options.limits?.maxSteps ?? options.maxSteps
}

/**
 * A zod refinement for hosts that also take a ready `run`: the step budget then belongs to that run.
 * It also refuses `maxSteps` and `limits.maxSteps` together, and checks `limits.maxSteps` is a positive integer.
 */
export function runBudgetRefinement(options: Record<string, unknown>, issues: z.RefinementCtx): void {
  const limits = isObject(options.limits) ? (options.limits as HostLimits) : undefined
  const inLimits = limits?.maxSteps
  if (inLimits !== undefined && !(Number.isSafeInteger(inLimits) && inLimits > 0)) {
    issues.addIssue({ code: 'custom', path: ['limits', 'maxSteps'], message: 'must be a positive integer, e.g. 50' })
  }
  if (inLimits !== undefined && options.maxSteps !== undefined) {
    issues.addIssue({
      code: 'custom',
      path: ['maxSteps'],
      message: 'is the deprecated spelling of limits.maxSteps; give only limits.maxSteps',
    })
  }
  if (options.run !== undefined && (inLimits !== undefined || options.maxSteps !== undefined)) {
    issues.addIssue({
      code: 'custom',
      path: inLimits !== undefined ? ['limits', 'maxSteps'] : ['maxSteps'],
      message: 'applies to the new run only; with `run`, set maxSteps in createRun()',
    })
  }
}
