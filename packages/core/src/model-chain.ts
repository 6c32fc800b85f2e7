import type { ModelAdapter } from './model.js'
import { CLOSED, type ModelBreakerState } from './model-breaker.js'
import { OptionsError } from './options.js'
import { closest } from './suggest.js'

/**
 * What one model costs, in US dollars per million tokens, as the provider's price list says.
 *
 * @example
 * createAgent({ model, tools, limits: { maxCostUsd: 2 }, prices: { 'gpt-4o-mini': { inputPerMTokUsd: 0.15, outputPerMTokUsd: 0.6 } } })
 */
export interface ModelPrice {
  readonly inputPerMTokUsd: number
  readonly outputPerMTokUsd: number
}

/** One model of the chain: its name (reports, events, the price table), its adapter, its breaker. */
export interface ModelLink {
  readonly name: string
  readonly adapter: ModelAdapter
  readonly price: ModelPrice | undefined
  /** The circuit of this model, shared by every run of the agent; `undefined` for a chain of one. */
  breaker: ModelBreakerState | undefined
}

const OWNER = 'createAgent()'
/** Names that would read back as Object.prototype's own keys from a plain-object table. */
const RESERVED = new Set(['__proto__', 'constructor', 'prototype'])

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? 'an object without generate()' : typeof value
}

const isAdapter = (value: unknown): value is ModelAdapter =>
  typeof value === 'object' && value !== null && typeof (value as { generate?: unknown }).generate === 'function'

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}

const isAmount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0

function checkPrice(name: string, value: unknown): ModelPrice {
  const path = `prices.${name}`
  const fix = `expected { inputPerMTokUsd, outputPerMTokUsd }, each a finite number of US dollars >= 0 per million tokens, e.g. { inputPerMTokUsd: 0.15, outputPerMTokUsd: 0.6 }`
  if (!isPlainObject(value)) throw new OptionsError(OWNER, [{ path, message: fix }])
  const extra = Object.keys(value).filter((k) => k !== 'inputPerMTokUsd' && k !== 'outputPerMTokUsd')
  if (extra.length > 0) throw new OptionsError(OWNER, [{ path, message: `unknown option "${extra[0]}"; ${fix}` }])
  const issues = (['inputPerMTokUsd', 'outputPerMTokUsd'] as const)
    .filter((key) => !isAmount(value[key]))
    .map((key) => ({
      path: `${path}.${key}`,
      message: `must be a finite number of US dollars >= 0 per million tokens (got ${String(value[key])})`,
    }))
  if (issues.length > 0) throw new OptionsError(OWNER, issues)
  return { inputPerMTokUsd: value.inputPerMTokUsd as number, outputPerMTokUsd: value.outputPerMTokUsd as number }
}

/**
 * The chain from `createAgent({ model, prices })`: one adapter or an array of them, in fallback
 * order, each named by its `name` (else `model 1`, `model 2`, …) and priced from `prices` by that name.
 * `layered` (the agent has model layers): `prices` may also price models a layer asks instead.
 */
export function modelChain(model: unknown, prices: unknown, needPrices: boolean, layered = false): ModelLink[] {
  const list: unknown[] = Array.isArray(model) ? model : [model]
  if (list.length === 0) {
    throw new OptionsError(OWNER, [
      { path: 'model', message: 'the fallback chain is empty; pass one model adapter or an array of them, primary first' },
    ])
  }
  const names: string[] = []
  for (const [i, entry] of list.entries()) {
    const path = Array.isArray(model) ? `model[${i}]` : 'model'
    if (!isAdapter(entry)) {
      throw new OptionsError(OWNER, [
        {
          path,
          message: `model must be an object with generate({ messages, tools, signal }), got ${describe(entry)} (e.g. aiSdkModel(openai('gpt-4o-mini')))`,
        },
      ])
    }
    const own = (entry as { name?: unknown }).name
    if (own !== undefined && (typeof own !== 'string' || own.trim() === '')) {
      throw new OptionsError(OWNER, [
        {
          path: `${path}.name`,
          message: `must be a non-empty string naming the model (got ${typeof own === 'string' ? '""' : typeof own})`,
        },
      ])
    }
    const name = own ?? (list.length === 1 ? 'model' : `model ${i + 1}`)
    if (RESERVED.has(name))
      throw new OptionsError(OWNER, [{ path: `${path}.name`, message: `"${name}" cannot name a model; pick another name` }])
    if (names.includes(name)) {
      throw new OptionsError(OWNER, [
        { path: `${path}.name`, message: `two models are named "${name}"; names must be unique (they key prices and reports)` },
      ])
    }
    names.push(name)
  }
  const table = new Map<string, ModelPrice>()
  if (prices !== undefined) {
    if (!isPlainObject(prices)) {
      throw new OptionsError(OWNER, [
        { path: 'prices', message: 'must be a plain object { [model name]: { inputPerMTokUsd, outputPerMTokUsd } }' },
      ])
    }
    for (const key of Object.keys(prices)) {
      if (RESERVED.has(key))
        throw new OptionsError(OWNER, [
          { path: `prices.${key}`, message: `"${key}" names no model; key prices by the models' names (${names.join(', ')})` },
        ])
      // With model layers, a price may be for a model a layer asks instead (a fallback layer's spare).
      if (!names.includes(key) && !layered) {
        const guess = closest(key, names)
        throw new OptionsError(OWNER, [
          {
            path: `prices.${key}`,
            message: `names no model of the chain${guess === undefined ? '' : `; did you mean '${guess}'?`} (models: ${names.join(', ')})`,
          },
        ])
      }
      table.set(key, checkPrice(key, prices[key]))
    }
  }
  if (needPrices) {
    const missing = names.filter((n) => !table.has(n))
    if (missing.length > 0) {
      throw new OptionsError(OWNER, [
        {
          path: 'prices',
          message: `limits.maxCostUsd needs a price for every model; add prices['${missing[0]}'] = { inputPerMTokUsd, outputPerMTokUsd }`,
        },
      ])
    }
  }
  return list.map((adapter, i) => ({
    name: names[i] as string,
    adapter: adapter as ModelAdapter,
    price: table.get(names[i] as string),
    breaker: list.length === 1 ? undefined : CLOSED,
  }))
}
