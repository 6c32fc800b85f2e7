import { abortReason, type Layer, LoopError, type Middleware, type ModelMiddleware, type ToolContext, ToolError } from '@shallot/core'
import { callNext, optionsParser, refineWallNow } from '@shallot/core/kit'
import { z } from 'zod'
import { type Classifier, classifyOptionsSchema, createClassifier } from './create-classifier.js'
import { modelClassifierLayer } from './model-classifier.js'

/**
 * Options of {@link errorClassifier}, for tool calls and model calls alike: the {@link classify} options, plus what
 * to do with ToolErrors passing through (tool calls only).
 *
 * @example
 * errorClassifierOptionsSchema.parse({ maxRetryAfterMs: 30_000, sanitizeToolErrors: false })
 */
export const errorClassifierOptionsSchema = classifyOptionsSchema
  .extend({
    /** Redact, strip and cap the text of ToolErrors thrown by inner layers and tools too. Default true. Tool calls only: on a model call a ToolError passes as it is. */
    sanitizeToolErrors: z.boolean().default(true),
  })
  .strict()
  .superRefine(refineWallNow)

export type ErrorClassifierOptions = z.input<typeof errorClassifierOptionsSchema>

const parseErrorClassifierOptions = optionsParser('errorClassifier()', errorClassifierOptionsSchema)

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

/** What `errorClassifier()` returns: one layer, with a side for tool calls and a side for model calls. */
export interface ErrorClassifierLayer extends Layer {
  readonly name: 'error-classifier'
  /** Listed in `middleware`: a foreign throw of a tool or an inner layer becomes a soft, redacted ToolError. */
  readonly wrapToolCall: Middleware
  /** Listed in `modelMiddleware`: a provider's failure becomes the typed error retry, breaker and fallback read. */
  readonly wrapModelCall: ModelMiddleware
}

/**
 * Classifies failures once, from one set of rules (data: `options.rules` run first), built here for both lists.
 *
 * - Tool calls (`middleware`): foreign throws from the layers inside it and from the tool (HTTP errors of every
 *   common shape, Node and undici network errors, AbortError/TimeoutError, ZodError, TypeError and kin) become
 *   precise soft ToolErrors, with secrets, private addresses and home paths redacted and the text capped.
 *   ToolErrors and LoopErrors pass through (ToolError text sanitized unless `sanitizeToolErrors: false`);
 *   throwables no rule recognises are rethrown unchanged for panicCatcher.
 * - Model calls (`modelMiddleware`): a provider's failure leaving the layers inside it becomes the typed error the
 *   model retry, breaker and fallback layers read — a retryable `ToolError` (`rate_limited`, `overloaded`,
 *   `upstream_error`, `network_error`, `timeout`) with `retryAfterMs`, or `LoopError('context_exceeded' |
 *   'user_input_required')`. Place it inside (after) those layers.
 *
 * @example
 * const classifier = errorClassifier({ rules: [{ match: { status: 404 }, then: { code: 'no_such_order', category: 'recoverable', hint: 'ids look like ORD-2026-NNNNN' } }] })
 * createAgent({ model, tools, middleware: [panicCatcher(), retry(), classifier, timeout()], modelMiddleware: [retry(), classifier] })
 */
export function errorClassifier(options?: ErrorClassifierOptions): ErrorClassifierLayer {
  const { sanitizeToolErrors, ...rest } = parseErrorClassifierOptions(options)
  const classifier = createClassifier(rest)
  return Object.freeze({
    name: 'error-classifier',
    wrapToolCall: toolClassifierOf(classifier, rest.secrets, sanitizeToolErrors),
    wrapModelCall: modelClassifierLayer(classifier, rest.secrets),
  })
}

/** The tool side: the rejection of next() shaped by {@link shape}. */
function toolClassifierOf(classifier: Classifier, secrets: readonly string[], sanitizeToolErrors: boolean): Middleware {
  // A reaction on next()'s promise rather than an `await` in a try: a call blocked in its tool keeps
  // a promise reaction here, not a suspended frame.
  const layer: Middleware = function errorClassifier(ctx, next) {
    return callNext(next).then(undefined, (err: unknown) => {
      throw shape(err, ctx, classifier, sanitizeToolErrors)
    })
  }
  // Declared to the stack, which redacts them from every text the model reads, not only this layer's.
  if (secrets.length > 0) layer.secrets = secrets
  return layer
}
