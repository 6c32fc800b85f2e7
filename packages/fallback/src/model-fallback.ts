import {
  abortReason,
  LoopError,
  type ModelAdapter,
  type ModelContext,
  type ModelInfo,
  type ModelMiddleware,
  OptionsError,
  ToolError,
} from '@shallot/core'
import { describeModelFailure, isTransientModelError } from '@shallot/core/kit'
import { z } from 'zod'

declare module '@shallot/core' {
  interface ModelContext {
    /**
     * Set by the model side of `fallback()` on every model it asks: true while a spare would be asked should this
     * model fail. A retry inside then bounds the call by its attempts instead of riding out this model's outage.
     */
    spareModel?: boolean
  }
}

const OWNER = 'fallback()'
/** The most spare models a chain lists. */
export const MAX_MODELS = 10

/** How a config file names a spare model: `provider:id`, as `shallot run --model` does. */
export const modelSpecSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,31}:\S{1,256}$/, "must name a model as 'provider:id', e.g. 'anthropic:claude-sonnet-4-5'")

const isAdapter = (v: unknown): v is ModelAdapter =>
  typeof v === 'object' && v !== null && typeof (v as { generate?: unknown }).generate === 'function'
const adapterSchema = z.custom<ModelAdapter>(isAdapter)
const spareSchema = z.union([adapterSchema, modelSpecSchema], {
  error: "must be a model adapter (an object with generate()) or a 'provider:id' string, e.g. 'anthropic:claude-sonnet-4-5'",
})

/** Turns a `provider:id` string into a model adapter: the host's or the user's, e.g. the one `shallot run` uses. */
export type ResolveModel = (spec: string) => ModelAdapter

/** The options of the model side, in {@link fallback}'s one options schema. */
export const modelShape = {
  /**
   * Model calls only: the spare models, in the order they are tried after the agent's own: adapters, or
   * `provider:id` strings that `resolveModel` turns into adapters. Giving them gives the layer its model side.
   */
  models: z.array(spareSchema).min(1).max(MAX_MODELS).optional(),
  /** Model calls only: resolves the `provider:id` strings of `models`, once, when the layer is made. */
  resolveModel: z.custom<ResolveModel>((v) => typeof v === 'function', { message: 'must be a function (spec) => ModelAdapter' }).optional(),
}

/** One model's part in a call that fell through: as core's chain reports it in `fallback_exhausted`. */
interface Tried {
  readonly model: string
  readonly attempts: number
  readonly circuit: string
  readonly error: string
  /** The failure, for `cause`; none for a model its breaker skipped. */
  readonly last: unknown
}

function infoOf(adapter: ModelAdapter, fallbackName: string): ModelInfo {
  const own = (adapter as { name?: unknown }).name
  const provider = (adapter as { provider?: unknown }).provider
  const name = typeof own === 'string' && own.trim() !== '' ? own : fallbackName
  return typeof provider === 'string' && provider !== '' ? { name, provider, adapter } : { name, adapter }
}

/** The spare models, resolved and checked: every entry an adapter, no model twice. */
function sparesOf(models: readonly (ModelAdapter | string)[], resolve: ResolveModel | undefined): ModelInfo[] {
  const spares: ModelInfo[] = []
  for (const [i, entry] of models.entries()) {
    const path = `models[${i}]`
    let adapter: unknown = entry
    if (typeof entry === 'string') {
      if (resolve === undefined) {
        throw new OptionsError(OWNER, [
          {
            path,
            message: `names '${entry}'; pass resolveModel: (spec) => adapter to turn 'provider:id' into a model, or pass the adapter`,
          },
        ])
      }
      try {
        adapter = resolve(entry)
      } catch (err) {
        throw new OptionsError(OWNER, [
          { path, message: `resolveModel('${entry}') threw: ${err instanceof Error ? err.message : String(err)}` },
        ])
      }
      if (!isAdapter(adapter))
        throw new OptionsError(OWNER, [{ path, message: `resolveModel('${entry}') returned no model adapter (an object with generate())` }])
    }
    const info = infoOf(adapter as ModelAdapter, typeof entry === 'string' ? entry : `fallback ${i + 1}`)
    const twin = spares.findIndex((s) => s.adapter === info.adapter || s.name === info.name)
    if (twin >= 0) {
      throw new OptionsError(OWNER, [
        { path, message: `is the same model as models[${twin}] ('${info.name}'); list each spare once (names key events and reports)` },
      ])
    }
    spares.push(info)
  }
  return spares
}

/** What a circuit breaker inside left in the context: `@shallot/circuit-breaker`'s `ModelCircuitNote`, read by its shape. */
function circuitOf(ctx: ModelContext, model: string): { circuit: string; refused: boolean } | undefined {
  const note = (ctx as { circuit?: { model?: unknown; circuit?: unknown; refused?: unknown } }).circuit
  if (typeof note !== 'object' || note === null || note.model !== model || typeof note.circuit !== 'string') return undefined
  return { circuit: note.circuit, refused: note.refused === true }
}

/** The part one failed model played, in core's chain's words: skipped by its circuit, or its failure and where its circuit is. */
function triedOf(ctx: ModelContext, model: string, attempts: number, err: unknown): Tried {
  const note = circuitOf(ctx, model)
  if (ToolError.is(err) && err.code === 'circuit_open' && (note === undefined || note.refused)) {
    const circuit = note?.circuit ?? (typeof err.details?.circuit === 'string' ? err.details.circuit : 'open')
    const wait = err.retryAfterMs === undefined ? 'a probe is in flight' : `${Math.ceil(err.retryAfterMs)} ms left`
    return { model, attempts: attempts - 1, circuit, error: `skipped: circuit ${circuit} (${wait})`, last: undefined }
  }
  const circuit = note?.circuit ?? 'none'
  const error = `${describeModelFailure(err)}${note === undefined || circuit === 'closed' ? '' : `; circuit ${circuit}`}`
  return { model, attempts, circuit, error, last: err }
}

function exhausted(tried: readonly Tried[]): LoopError {
  const last = [...tried].reverse().find((t) => t.last !== undefined)
  return new LoopError('fallback_exhausted', `every model of the chain was unavailable (${tried.map((t) => t.model).join(', ')})`, {
    ...(last === undefined ? {} : { cause: last.last }),
    details: {
      models: tried.map((t) => ({ model: t.model, attempts: t.attempts, circuit: t.circuit, error: t.error })),
      failure: tried.map((t) => `${t.model}: ${t.error}`).join('; '),
    },
  })
}

/** Whether a failure moves the call on to the next model: what core's chain moves on after (transient, or refused by a breaker). */
const movesOn = (err: unknown): boolean => (ToolError.is(err) && err.code === 'circuit_open') || isTransientModelError(err)

/**
 * The model side of {@link fallback}, the fallback chain of model calls: when the agent's model fails in
 * a way that says it is down (a transient failure after the retries inside, or a breaker inside that
 * refuses it), the next spare model is asked: `ctx.model` is replaced for the layers inside and `next()`
 * is called again, from attempt 1. A `model.fallback` event says each move. When every model failed the
 * run ends as `fallback_exhausted`, naming each model, its attempts, its circuit and its last error, in
 * the words the agent's own chain used. A LoopError, the run's cancellation and a failure that is
 * not transient (a bad request) end the call at once.
 */
export function modelFallback(models: readonly (ModelAdapter | string)[], resolveModel: ResolveModel | undefined): ModelMiddleware {
  const spares = sparesOf(models, resolveModel)

  /** What fails over after the primary failed with `failure`: the spares in order, each asked from `first`. */
  async function fellThrough(ctx: ModelContext, next: () => Promise<void>, first: number, failure: unknown): Promise<void> {
    const primary = ctx.model
    // A spare that is the agent's own model is not asked twice.
    const chain = spares.filter((s) => s.adapter !== primary.adapter && s.name !== primary.name)
    if (chain.length === 0) throw failure
    const tried = [triedOf(ctx, primary.name, ctx.attempt - first + 1, failure)]
    for (const model of chain) {
      if (ctx.signal.aborted) throw abortReason(ctx.signal)
      const from = tried[tried.length - 1] as Tried
      const reason = `${from.model}: ${from.error}`
      ctx.log.warn({ from: from.model, to: model.name, reason }, 'model fallback')
      ctx.emit({ type: 'model.fallback', at: ctx.clock.now(), runId: ctx.run.id, turn: ctx.turn, from: from.model, to: model.name, reason })
      ctx.model = model
      ctx.attempt = first
      ctx.spareModel = model !== chain[chain.length - 1]
      ;(ctx as { circuit?: unknown }).circuit = undefined
      try {
        await next()
        return
      } catch (err) {
        if (LoopError.is(err) || ctx.signal.aborted || !movesOn(err)) throw err
        tried.push(triedOf(ctx, model.name, ctx.attempt - first + 1, err))
      }
    }
    throw exhausted(tried)
  }

  return async function fallbackOfModels(ctx, next) {
    const first = ctx.attempt
    ;(ctx as { circuit?: unknown }).circuit = undefined
    ctx.spareModel = spares.some((s) => s.adapter !== ctx.model.adapter && s.name !== ctx.model.name)
    try {
      await next()
    } catch (err) {
      if (LoopError.is(err) || ctx.signal.aborted || !movesOn(err)) throw err
      return fellThrough(ctx, next, first, err)
    }
  }
}
