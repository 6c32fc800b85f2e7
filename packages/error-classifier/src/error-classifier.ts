import {
  abortReason,
  LoopError,
  type Middleware,
  type ModelMiddleware,
  type ToolContext,
  ToolError,
  trustedMiddleware,
} from '@shallot/core'
import { callNext, optionsParser, refineWallNow } from '@shallot/core/kit'
import { z } from 'zod'
import { type Classifier, classifyOptionsSchema, createClassifier } from './create-classifier.js'
import { modelClassifierLayer } from './model-classifier.js'

/**
 * Options of {@link errorClassifier}: the {@link classify} options, plus what to do with ToolErrors passing through.
 *
 * @example
 * errorClassifierOptionsSchema.parse({ maxRetryAfterMs: 30_000, sanitizeToolErrors: false })
 */
export const errorClassifierOptionsSchema = classifyOptionsSchema
  .extend({
    /** Redact, strip and cap the text of ToolErrors thrown by inner layers and tools too. Default true. */
    sanitizeToolErrors: z.boolean().default(true),
  })
  .strict()
  .superRefine(refineWallNow)

export type ErrorClassifierOptions = z.input<typeof errorClassifierOptionsSchema>

const parseErrorClassifierOptions = optionsParser('errorClassifier()', errorClassifierOptionsSchema)
// The model layer's errors name the factory the user called: errorClassifierModel({ maxRetryAfterMs: NaN }) said errorClassifier().
const parseModelClassifierOptions = optionsParser('errorClassifierModel()', errorClassifierOptionsSchema)

function nameOf(err: unknown): string {
  if (typeof err !== 'object' || err === null) return typeof err
  try {
    const name = (err as { name?: unknown }).name
    return typeof name === 'string' ? name : 'object'
  } catch {
    return 'object'
  }
}

function shape(err: unknown, ctx: ToolContext, classifier: Classifier, sanitizeToolErrors: boolean): unknown {
  if (LoopError.is(err)) return err
  if (ToolError.is(err)) {
    if (!sanitizeToolErrors) return err
    const clean = classifier.sanitize(err, ctx.tool?.effect)
    if (clean !== err) ctx.emit('error-classifier.sanitized', { code: clean.code })
    return clean
  }
  // A cancelled run ends the run, whatever the tool threw on its way out.
  if (ctx.run.signal.aborted) return abortReason(ctx.run.signal)
  // An outer layer's deadline (say a timeout placed outside this one) explains the abort better than the tool's AbortError.
  if (ctx.signal.aborted) {
    const reason: unknown = ctx.signal.reason
    if (ToolError.is(reason) || LoopError.is(reason)) return reason
  }
  const error = classifier.tryClassify(err, ctx.call.name, ctx.tool?.effect)
  if (error === undefined) {
    ctx.emit('error-classifier.unclassified', { errorName: nameOf(err) })
    return err
  }
  const event: Record<string, unknown> = {
    code: error.code,
    category: error.category,
    retryable: error.retryable,
    safeToRepeat: error.safeToRepeat,
    rule: error.details?.rule,
  }
  if (error.retryAfterMs !== undefined) event.retryAfterMs = error.retryAfterMs
  if (error.details?.status !== undefined) event.status = error.details.status
  ctx.emit('error-classifier.classified', event)
  // panicCatcher never sees a bug this layer already turned soft, so the stack goes to the log here.
  if (error.code === 'tool_panic') ctx.log.error({ err, code: 'tool_panic' }, `tool "${ctx.call.name}" threw ${nameOf(err)}`)
  return error
}

/**
 * Turns foreign throws from the layers inside it and from the tool (HTTP errors of every common
 * shape, Node and undici network errors, AbortError/TimeoutError, ZodError, TypeError and kin) into
 * precise soft ToolErrors, with secrets, private addresses and home paths redacted and the text
 * capped. ToolErrors and LoopErrors pass through (ToolError text sanitized); throwables no rule
 * recognises are rethrown unchanged for panicCatcher. Rules are data: `options.rules` run first.
 *
 * @example
 * const stack = createStack({
 *   middleware: [panicCatcher(), retry(), errorClassifier({ rules: [{ match: { status: 404 }, then: { code: 'no_such_order', category: 'recoverable', hint: 'ids look like ORD-2026-NNNNN' } }] }), timeout({ ms: 10_000 })],
 *   tools: [getOrder],
 * })
 */
export function errorClassifier(options?: ErrorClassifierOptions): Middleware {
  const { sanitizeToolErrors, ...rest } = parseErrorClassifierOptions(options)
  const classifier = createClassifier(rest)
  // A reaction on next()'s promise rather than an `await` in a try: a call blocked in its tool keeps
  // a promise reaction here, not a suspended frame.
  const layer: Middleware = function errorClassifier(ctx, next) {
    return callNext(next).then(undefined, (err: unknown) => {
      throw shape(err, ctx, classifier, sanitizeToolErrors)
    })
  }
  // Declared to the stack, which redacts them from every text the model reads, not only this layer's.
  if (rest.secrets.length > 0) layer.secrets = rest.secrets
  // One next(), nothing after it but the rejection's shaping: the onion's contract holds on every path.
  return trustedMiddleware(layer)
}

/**
 * The error classifier for model calls (`createAgent({ modelMiddleware })`): a provider's failure
 * leaving the layers inside it becomes the typed error the model retry, breaker and fallback layers
 * read — a retryable `ToolError` (`rate_limited`, `overloaded`, `upstream_error`, `network_error`,
 * `timeout`) with `retryAfterMs`, or `LoopError('context_exceeded' | 'user_input_required')` — from
 * the same rules and options as {@link errorClassifier}. Place it inside (after) those layers.
 *
 * @example
 * const agent = createAgent({ model, tools, modelMiddleware: [retryModel(), errorClassifierModel({ secrets: [apiKey] })] })
 */
export function errorClassifierModel(options?: ErrorClassifierOptions): ModelMiddleware {
  const { sanitizeToolErrors: _shallotErrorsPassAsTheyAre, ...rest } = parseModelClassifierOptions(options)
  return modelClassifierLayer(createClassifier(rest), rest.secrets)
}
