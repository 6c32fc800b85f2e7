import { type Agent, type AgentModel, type AgentOptions, createAgent as createCoreAgent, type ParkingOutcome } from '@shallot/agent'
import { consecutive } from '@shallot/circuit-breaker'
import { type ModelAdapter, type ModelMiddleware, OptionsError, parseOptions } from '@shallot/core'
import { closest } from '@shallot/core/kit'
import { fallback } from '@shallot/fallback'
import { z } from 'zod'
import { defaultModelMiddleware } from './default-model-middleware.js'

const OWNER = 'createAgent()'
/** Names that would read back as Object.prototype's own keys from a plain-object table. */
const RESERVED = new Set(['__proto__', 'constructor', 'prototype'])

// A JavaScript timer holds at most 2^31 − 1 ms (about 24.8 days); a longer one fires at once.
const MAX_TIMER_MS = 2_147_483_647
const timerMs = (what: string) =>
  z.number().max(MAX_TIMER_MS, { error: `must be at most ${MAX_TIMER_MS} ms (about 24.8 days): a longer ${what} would fire at once` })

/** The sugar's options, checked in core's words before they become the layers' options. */
const sugarSchema = z.object({
  limits: z.object({ modelTimeoutMs: timerMs('deadline').positive().optional() }).optional(),
  modelRetry: z
    .strictObject({
      maxAttempts: z.number().int().min(1).max(10).optional(),
      baseMs: z.number().nonnegative().optional(),
      capMs: timerMs('backoff').nonnegative().optional(),
      maxRetryAfterMs: timerMs('wait').nonnegative().optional(),
    })
    .optional(),
  modelBreaker: z
    .strictObject({ threshold: z.number().int().min(1).max(1000).optional(), cooldownMs: z.number().nonnegative().optional() })
    .optional(),
})

const isAdapter = (value: unknown): value is ModelAdapter =>
  typeof value === 'object' && value !== null && typeof (value as { generate?: unknown }).generate === 'function'

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? 'an object without generate()' : typeof value
}

/**
 * The models of `model: [a, b]`, checked as core checked its chain: adapters, names unique and usable
 * as price keys. An unnamed model of a chain is named `model N`, as before, by a delegate carrying it.
 */
function chainOf(models: readonly unknown[]): ModelAdapter[] {
  if (models.length === 0) {
    throw new OptionsError(OWNER, [
      { path: 'model', message: 'the fallback chain is empty; pass one model adapter or an array of them, primary first' },
    ])
  }
  const names = new Set<string>()
  return models.map((entry, i) => {
    const path = `model[${i}]`
    if (!isAdapter(entry)) {
      throw new OptionsError(OWNER, [
        {
          path,
          message: `model must be an object with generate({ messages, tools, signal }), got ${describe(entry)} (e.g. aiSdkModel(openai('gpt-4o-mini')))`,
        },
      ])
    }
    const own = (entry as { name?: unknown }).name
    // A name that is no string is core's to refuse for the primary; for a spare, the same words here.
    if (own !== undefined && (typeof own !== 'string' || own.trim() === '')) {
      throw new OptionsError(OWNER, [
        {
          path: `${path}.name`,
          message: `must be a non-empty string naming the model (got ${typeof own === 'string' ? '""' : typeof own})`,
        },
      ])
    }
    const name = own ?? (models.length === 1 ? 'model' : `model ${i + 1}`)
    if (RESERVED.has(name))
      throw new OptionsError(OWNER, [{ path: `${path}.name`, message: `"${name}" cannot name a model; pick another name` }])
    if (names.has(name)) {
      throw new OptionsError(OWNER, [
        { path: `${path}.name`, message: `two models are named "${name}"; names must be unique (they key prices and reports)` },
      ])
    }
    names.add(name)
    return own === undefined ? named(entry, name) : entry
  })
}

/** An unnamed adapter under the name the chain gives it: the same generate, the same provider. */
function named(adapter: ModelAdapter, name: string): ModelAdapter {
  const provider = (adapter as { provider?: unknown }).provider
  const delegate = { name, generate: (request: Parameters<ModelAdapter['generate']>[0]) => adapter.generate(request) }
  return typeof provider === 'string' ? Object.assign(delegate, { provider }) : delegate
}

/**
 * Every model of the chain needs a price under `limits.maxCostUsd`, and every price names one of them
 * (core checks the rest: the prices' shape, reserved names). Core lets an agent with model layers price
 * models a layer may ask, so the names are checked here, where the chain is known.
 */
function checkPrices(chain: readonly ModelAdapter[], prices: unknown, needPrices: boolean): void {
  const names = chain.map((m) => (m as { name?: string }).name ?? 'model')
  const given = typeof prices === 'object' && prices !== null && !Array.isArray(prices) ? Object.keys(prices) : []
  const stray = given.find((key) => !names.includes(key) && !RESERVED.has(key))
  if (stray !== undefined) {
    const guess = closest(stray, names)
    throw new OptionsError(OWNER, [
      {
        path: `prices.${stray}`,
        message: `names no model of the chain${guess === undefined ? '' : `; did you mean '${guess}'?`} (models: ${names.join(', ')})`,
      },
    ])
  }
  const missing = needPrices ? names.find((n) => !given.includes(n)) : undefined
  if (missing !== undefined) {
    throw new OptionsError(OWNER, [
      {
        path: 'prices',
        message: `limits.maxCostUsd needs a price for every model; add prices['${missing}'] = { inputPerMTokUsd, outputPerMTokUsd }`,
      },
    ])
  }
}

/**
 * The default model stack for the agent's options: `defaultModelMiddleware()` with `modelRetry`,
 * `modelBreaker` and `limits.modelTimeoutMs` as its retry, breaker and timeout options, and for a chain
 * `model: [a, b]` a fallback layer outermost with the spares. As before, only a chain's models get a
 * breaker (core's figures: open after 3 failures in a row for 30 s).
 */
function defaultStackOf(options: AgentOptions<AgentModel>): { model: ModelAdapter; modelMiddleware: ModelMiddleware[] } {
  parseOptions(OWNER, sugarSchema, { limits: options.limits, modelRetry: options.modelRetry, modelBreaker: options.modelBreaker })
  const chain = Array.isArray(options.model) ? chainOf(options.model) : undefined
  if (isAdapter(options.model) || chain !== undefined)
    checkPrices(chain ?? [options.model as ModelAdapter], options.prices, options.limits?.maxCostUsd !== undefined)
  const spares = chain === undefined ? [] : chain.slice(1)
  const breaker = options.modelBreaker ?? {}
  const layers = defaultModelMiddleware({
    circuitBreaker:
      spares.length === 0
        ? false
        : { policy: consecutive({ threshold: breaker.threshold ?? 3 }), cooldownMs: breaker.cooldownMs ?? 30_000 },
    retry: { maxAttempts: 3, baseMs: 250, capMs: 4000, maxRetryAfterMs: 60_000, ...options.modelRetry },
    timeout: { ms: options.limits?.modelTimeoutMs ?? 60_000 },
  })
  if (spares.length > 0) layers.unshift(fallback({ models: spares }).wrapModelCall)
  return { model: (chain?.[0] ?? options.model) as ModelAdapter, modelMiddleware: layers }
}

/**
 * `@shallot/core`'s `createAgent`, with model calls through the default model stack when no
 * `modelMiddleware` is given: `defaultModelMiddleware()` (retry of transient failures with Retry-After
 * as a floor, the provider's failure classified once, a deadline per attempt) and, for `model: [a, b]`,
 * `fallback({ models })` and a breaker per model. `modelRetry`, `modelBreaker`, `limits.modelTimeoutMs` and
 * `model: [a, b]` are sugar for that stack's options (decision 500). With `modelMiddleware`, the layers
 * given there decide alone.
 *
 * @example
 * const agent = createAgent({ model: [gpt, claude], tools, modelRetry: { maxAttempts: 5 } })
 */
export function createAgent(options: AgentOptions<AgentModel> & { park: NonNullable<AgentOptions['park']> }): Agent<ParkingOutcome>
export function createAgent(options: AgentOptions<AgentModel>): Agent
export function createAgent(options: AgentOptions<AgentModel>): Agent<ParkingOutcome> {
  if (typeof options !== 'object' || options === null || options.modelMiddleware !== undefined) return createCoreAgent(options)
  const { model, modelMiddleware } = defaultStackOf(options)
  // The sugar became the stack's options: core's createAgent refuses it.
  const { modelRetry: _retry, modelBreaker: _breaker, limits, ...rest } = options
  const { modelTimeoutMs: _deadline, ...coreLimits } = limits ?? {}
  return createCoreAgent({ ...rest, ...(limits === undefined ? {} : { limits: coreLimits }), model, modelMiddleware })
}
