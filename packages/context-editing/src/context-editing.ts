import type { ModelEvent } from '@shallot/core'
import {
  abortReason,
  type Layer,
  LoopError,
  type ModelCallRequest,
  type ModelContext,
  type ModelMiddleware,
  type ModelNext,
  type RunContext,
} from '@shallot/core'
import { optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import { clearToolResults, type EditCounts, type Edited, type EditSettings, keepLast } from './edit-messages.js'
import { estimateTokens } from './estimate-tokens.js'

/** The strategies, by name: what a config file writes as `strategy:`. */
export const STRATEGIES = { clearToolResults, keepLast } as const
export type ContextEditingStrategy = keyof typeof STRATEGIES

/** What `keep` is when not given: 3 tool results (LangChain's `ClearToolUsesEdit`), or 10 turns for `keepLast`. */
export const DEFAULT_KEEP: Readonly<Record<ContextEditingStrategy, number>> = { clearToolResults: 3, keepLast: 10 }

/** The event of an edit, on the agent's `onEvent` stream. Counts only, never content. */
export const CONTEXT_EDITED = 'model.context_edited'

type CountTokens = (request: ModelCallRequest) => number

/** What a config file can hold: every option but `countTokens` (a function). */
const fileShape = {
  /** How to shorten the conversation. Default `clearToolResults`. */
  strategy: z.enum(['clearToolResults', 'keepLast']).default('clearToolResults'),
  /** The input-token budget of every model; above it the request is edited before it is sent. Default: none (edit only on `context_exceeded`). */
  maxInputTokens: z.number().int().positive().optional(),
  /** Budgets by model name (`ctx.model.name`); they replace `maxInputTokens` for that model. */
  models: z.record(z.string().min(1), z.number().int().positive()).default({}),
  /** Tool results left intact (`clearToolResults`, default 3), or turns kept after the task (`keepLast`, default 10). */
  keep: z.number().int().min(0).max(100_000).optional(),
  /** What a cleared tool result says instead. Default `[cleared]`. */
  placeholder: z.string().min(1).max(1_000).default('[cleared]'),
  /** Tools whose results are never cleared (`clearToolResults` only). */
  excludeTools: z.array(z.string().min(1)).default([]),
  /** The built-in estimator's characters per token. Default 4; lower it for code or non-Latin text. */
  charsPerToken: z.number().min(0.5).max(100).default(4),
}

function excludeOnlyWhenClearing(options: { strategy: string; excludeTools: readonly string[] }, issues: z.RefinementCtx): void {
  if (options.strategy === 'keepLast' && options.excludeTools.length > 0) {
    issues.addIssue({
      code: 'custom',
      path: ['excludeTools'],
      message: 'applies to strategy clearToolResults only: keepLast keeps or drops whole turns',
    })
  }
}

/** Options of {@link contextEditing}. */
export const contextEditingOptionsSchema = z
  .strictObject({
    ...fileShape,
    /** Your own token count of a request (a tokenizer); the built-in estimate when it throws or answers no finite count. */
    countTokens: z
      .custom<CountTokens>((value) => typeof value === 'function', { error: 'must be a function (request) => number of tokens' })
      .optional(),
  })
  .superRefine(excludeOnlyWhenClearing)

/** The options a config file gives `context-editing`: all but `countTokens`. */
export const contextEditingFileOptionsSchema = z.strictObject(fileShape).superRefine(excludeOnlyWhenClearing)

export type ContextEditingOptions = z.input<typeof contextEditingOptionsSchema>
/** Parsed options; a file's have no `countTokens`. */
export type ParsedContextEditingOptions = z.output<typeof contextEditingFileOptionsSchema> & {
  readonly countTokens?: CountTokens | undefined
}

const parse = optionsParser('contextEditing()', contextEditingOptionsSchema)

/** Why a request was edited: the estimate passed the budget, or the provider refused it. */
type Reason = 'over_budget' | 'context_exceeded'

/** One edit of one model call, as the event, the log and the run's error tell it. */
interface Applied extends EditCounts {
  readonly request: ModelCallRequest
  readonly reason: Reason
  readonly messagesBefore: number
  readonly estimatedTokensBefore: number
  readonly estimatedTokensAfter: number
}

const isContextExceeded = (err: unknown): err is LoopError => LoopError.is(err) && err.kind === 'context_exceeded'

/** The lowest and highest provider-count / estimate ratio trusted from a response's usage. */
const RATIO_RANGE = [0.25, 4] as const

/** What `contextEditing()` returns: a layer of model calls only. */
export interface ContextEditingLayer extends Layer {
  readonly name: 'context-editing'
  /** Listed in `modelMiddleware`: shortens a request that would not fit the window, and asks once more. */
  readonly wrapModelCall: ModelMiddleware
}

/** The layer for parsed options: what `contextEditing()` and the definition's `create` return. */
export function contextEditingOf(options: ParsedContextEditingOptions): ContextEditingLayer {
  return Object.freeze({ name: 'context-editing', wrapModelCall: editingOf(options) })
}

/** The model middleware that edits a request, for parsed options. */
function editingOf(options: ParsedContextEditingOptions): ModelMiddleware {
  const { strategy, maxInputTokens, models, placeholder, charsPerToken, countTokens } = options
  const edit = STRATEGIES[strategy]
  const settings: EditSettings = { keep: options.keep ?? DEFAULT_KEEP[strategy], placeholder, excludeTools: new Set(options.excludeTools) }
  const budgets = new Map(Object.entries(models))
  // Per run and model: the provider's input tokens over our estimate of the same request, from the last response's usage.
  const ratios = new WeakMap<RunContext, Map<string, number>>()

  function rawEstimate(ctx: ModelContext, request: ModelCallRequest): number {
    if (countTokens !== undefined) {
      try {
        const counted = countTokens(request)
        if (Number.isFinite(counted) && counted >= 0) return counted
        ctx.log.warn({ counted: String(counted) }, 'contextEditing(): countTokens gave no finite count; using the built-in estimate')
      } catch (err) {
        ctx.log.warn({ err }, 'contextEditing(): countTokens threw; using the built-in estimate')
      }
    }
    return estimateTokens(request, charsPerToken)
  }

  /** The estimate corrected by what the provider counted last time, for the budget check. */
  const corrected = (ctx: ModelContext, raw: number) => raw * (ratios.get(ctx.run)?.get(ctx.model.name) ?? 1)

  /** Remembers the provider's count of the request just answered, when it reported one (built-in estimator only). */
  function learn(ctx: ModelContext, sentEstimate: number | undefined): void {
    const input = ctx.response?.usage?.inputTokens
    if (countTokens !== undefined || sentEstimate === undefined || sentEstimate <= 0) return
    if (typeof input !== 'number' || !Number.isFinite(input) || input <= 0) return
    const ratio = Math.min(RATIO_RANGE[1], Math.max(RATIO_RANGE[0], input / sentEstimate))
    let byModel = ratios.get(ctx.run)
    if (byModel === undefined) ratios.set(ctx.run, (byModel = new Map()))
    byModel.set(ctx.model.name, ratio)
  }

  /** Edits the request, tells it, and answers the edit; undefined when the strategy changes nothing. */
  function apply(ctx: ModelContext, request: ModelCallRequest, reason: Reason, before: number): Applied | undefined {
    const edited: Edited = edit(request.messages, settings)
    if (edited.clearedToolResults + edited.droppedMessages + edited.unpaired === 0) return undefined
    const { messages, ...counts } = edited
    const next: ModelCallRequest = { ...request, messages }
    const applied: Applied = {
      ...counts,
      request: next,
      reason,
      messagesBefore: request.messages.length,
      estimatedTokensBefore: before,
      estimatedTokensAfter: rawEstimate(ctx, next),
    }
    tell(ctx, strategy, applied)
    return applied
  }

  return async function contextEditing(ctx: ModelContext, next: ModelNext): Promise<void> {
    const original = ctx.request
    const signal = ctx.signal
    const budget = budgets.get(ctx.model.name) ?? maxInputTokens
    let sent: number | undefined
    let applied: Applied | undefined
    if (budget !== undefined) {
      sent = rawEstimate(ctx, original)
      if (corrected(ctx, sent) > budget) applied = apply(ctx, original, 'over_budget', sent)
      if (applied !== undefined) {
        ctx.request = applied.request
        sent = applied.estimatedTokensAfter
      }
    }
    try {
      try {
        await next()
        learn(ctx, sent)
        return
      } catch (err) {
        if (!isContextExceeded(err)) throw err
        if (applied !== undefined) throw stillTooLong(err, strategy, applied)
        ctx.signal = signal
        if (signal.aborted) throw abortReason(signal)
        // The event names the attempt that sends the shortened request; with nothing to shorten there is none.
        ctx.attempt++
        applied = apply(ctx, original, 'context_exceeded', sent ?? rawEstimate(ctx, original))
        if (applied === undefined) {
          ctx.attempt--
          throw nothingToShorten(err, strategy, settings.keep)
        }
      }
      ctx.request = applied.request
      try {
        await next()
      } catch (err) {
        throw isContextExceeded(err) ? stillTooLong(err, strategy, applied) : err
      }
      learn(ctx, applied.estimatedTokensAfter)
    } finally {
      ctx.request = original
    }
  }
}

/**
 * Shortens a model request that would not fit the model's context window, and asks once more: a layer of
 * model calls only (`wrapModelCall`), listed in `modelMiddleware`; it has no tool side. Before
 * the call, when the request's estimated input tokens pass the budget (`models[name]`, else
 * `maxInputTokens`); after it, when the provider answered `LoopError('context_exceeded')` (what
 * `errorClassifier()` and `aiSdkModel` make of a context-length refusal: put this layer outside
 * them). `clearToolResults` replaces all but the last `keep` tool results with `placeholder`;
 * `keepLast` keeps the task and the last `keep` turns. A tool call is never cut from its result. The
 * edit is made on a copy for this call only: the run's transcript and checkpoints keep every message.
 * A request that still does not fit, or that the strategy cannot shorten, ends the run with
 * `context_exceeded` saying what was tried.
 *
 * @example
 * createAgent({ model, tools, modelMiddleware: [contextEditing({ maxInputTokens: 100_000 }), ...defaultModelMiddleware()] })
 */
export function contextEditing(options?: ContextEditingOptions): ContextEditingLayer {
  return contextEditingOf(parse(options))
}

/** The counts of an edit, for the event and the run's error: never a message's content. */
function summary(strategy: ContextEditingStrategy, applied: Applied) {
  return {
    strategy,
    reason: applied.reason,
    messagesBefore: applied.messagesBefore,
    messagesAfter: applied.request.messages.length,
    clearedToolResults: applied.clearedToolResults,
    droppedMessages: applied.droppedMessages,
    unpaired: applied.unpaired,
    estimatedTokensBefore: Math.round(applied.estimatedTokensBefore),
    estimatedTokensAfter: Math.round(applied.estimatedTokensAfter),
  }
}

/** The log line and the event of an edit. A logger or listener that throws costs the line or the event, never the call. */
function tell(ctx: ModelContext, strategy: ContextEditingStrategy, applied: Applied): void {
  const fields = summary(strategy, applied)
  try {
    ctx.log.info({ model: ctx.model.name, ...fields }, 'model request shortened by context editing')
  } catch {
    // the log line is lost; the edit stands
  }
  // Not in core's ModelEvent union: the agent hands every event to onEvent as it is (see the README).
  const event = {
    type: CONTEXT_EDITED,
    at: ctx.clock.now(),
    runId: ctx.run.id,
    turn: ctx.turn,
    model: ctx.model.name,
    attempt: ctx.attempt,
    ...fields,
  }
  try {
    ctx.emit(event as unknown as ModelEvent)
  } catch {
    // the event is lost; the edit stands
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

function describeEdit(strategy: ContextEditingStrategy, applied: Applied): string {
  const what =
    strategy === 'clearToolResults'
      ? `${plural(applied.clearedToolResults, 'tool result')} cleared`
      : `${plural(applied.droppedMessages, 'message')} left out`
  return `${strategy}: ${what}, about ${Math.round(applied.estimatedTokensBefore)} → ${Math.round(applied.estimatedTokensAfter)} tokens`
}

/** The run's end when the shortened request was refused too: what was tried, and the provider's words. */
function stillTooLong(err: LoopError, strategy: ContextEditingStrategy, applied: Applied): LoopError {
  return new LoopError(
    'context_exceeded',
    `the request does not fit the model's context window even after context editing (${describeEdit(strategy, applied)}): ${err.message}`,
    { cause: err, details: { ...err.details, contextEditing: summary(strategy, applied) } },
  )
}

/** The run's end when the strategy had nothing to shorten. */
function nothingToShorten(err: LoopError, strategy: ContextEditingStrategy, keep: number): LoopError {
  return new LoopError(
    'context_exceeded',
    `the request does not fit the model's context window, and context editing (${strategy}, keep ${keep}) found nothing to shorten: ${err.message}`,
    {
      cause: err,
      details: {
        ...err.details,
        contextEditing: { strategy, keep, clearedToolResults: 0, droppedMessages: 0 },
        fix: strategy === 'clearToolResults' ? 'lower keep, or use strategy keepLast' : 'lower keep, or make tools return less text',
      },
    },
  )
}
