import { isLayer, type LayerEntry, type ModelEvent, type ModelMiddleware, type StackEvent, TOOL_EFFECTS } from '@shallot/core'
import { onlyWithoutStack, runBudgetRefinement, stackSourceShape } from '@shallot/core/kit'
import type { ToolCallRequest } from 'langchain'
import { z } from 'zod'
import { reconcileSchema } from './to-shallot-tool.js'

const custom = <T>(what: string, check: (v: unknown) => boolean) => z.custom<T>(check, { message: `must be ${what}` })
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
    /** Called with the model layers' events: `model.retry`, `model.fallback`, `model.circuit`. A throwing listener is logged. */
    onModelEvent: custom<(event: ModelEvent) => void>('a function (event) => void', isFunction).optional(),
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
     * `circuitBreaker()`, `fallback({ models })` with LangChain chat models as spares, your own), as
     * `createAgent({ modelMiddleware })` takes them: layers with a model side, or model middleware functions.
     * Default: `defaultModelMiddleware()` with `modelCall`'s retry fields and deadline. `modelCall.timeoutMs` stays
     * the deadline of each attempt (a timeout layer inside the ones given).
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

export const RETRY_FIELDS = ['maxAttempts', 'baseMs', 'capMs', 'maxRetryAfterMs'] as const

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
