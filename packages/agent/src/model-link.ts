import { type ModelAdapter, OptionsError } from '@shallot/core'
import { closest } from '@shallot/core/kit'

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

/** The model that answered a call: its name (reports, events, the price table), its adapter, its price. */
export interface ModelLink {
  readonly name: string
  readonly adapter: ModelAdapter
  readonly price: ModelPrice | undefined
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

/** The agent's model, named and priced, and the price table for the models a layer may ask instead. */
export interface AgentModelLink {
  readonly link: ModelLink
  readonly prices: ReadonlyMap<string, ModelPrice>
}

/**
 * The model from `createAgent({ model, prices })`, named by its `name` (else `model`) and priced from
 * `prices` by that name. With model layers (`layered`), `prices` may also price the models a layer asks
 * instead (a fallback layer's spares); without, every price must name the agent's model.
 */
export function modelLink(model: unknown, prices: unknown, needPrices: boolean, layered: boolean): AgentModelLink {
  if (Array.isArray(model)) {
    throw new OptionsError(OWNER, [
      {
        path: 'model',
        message:
          'must be one model adapter, got an array; for a spare, pass model: a and list fallback({ models: [b] }) from @shallot/fallback in modelMiddleware',
      },
    ])
  }
  if (!isAdapter(model)) {
    throw new OptionsError(OWNER, [
      {
        path: 'model',
        message: `model must be an object with generate({ messages, tools, signal }), got ${describe(model)} (e.g. aiSdkModel(openai('gpt-4o-mini')))`,
      },
    ])
  }
  const own = (model as { name?: unknown }).name
  if (own !== undefined && (typeof own !== 'string' || own.trim() === '')) {
    throw new OptionsError(OWNER, [
      { path: 'model.name', message: `must be a non-empty string naming the model (got ${typeof own === 'string' ? '""' : typeof own})` },
    ])
  }
  const name = own ?? 'model'
  if (RESERVED.has(name))
    throw new OptionsError(OWNER, [{ path: 'model.name', message: `"${name}" cannot name a model; pick another name` }])
  const table = priceTable(prices, name, layered)
  if (needPrices && !table.has(name)) {
    throw new OptionsError(OWNER, [
      {
        path: 'prices',
        message: `limits.maxCostUsd needs a price for every model; add prices['${name}'] = { inputPerMTokUsd, outputPerMTokUsd }`,
      },
    ])
  }
  return { link: { name, adapter: model, price: table.get(name) }, prices: table }
}

function priceTable(prices: unknown, name: string, layered: boolean): Map<string, ModelPrice> {
  const table = new Map<string, ModelPrice>()
  if (prices === undefined) return table
  if (!isPlainObject(prices)) {
    throw new OptionsError(OWNER, [
      { path: 'prices', message: 'must be a plain object { [model name]: { inputPerMTokUsd, outputPerMTokUsd } }' },
    ])
  }
  for (const key of Object.keys(prices)) {
    if (RESERVED.has(key))
      throw new OptionsError(OWNER, [
        { path: `prices.${key}`, message: `"${key}" names no model; key prices by the models' names (${name})` },
      ])
    // With model layers, a price may be for a model a layer asks instead (a fallback layer's spare).
    if (key !== name && !layered) {
      const guess = closest(key, [name])
      throw new OptionsError(OWNER, [
        {
          path: `prices.${key}`,
          message: `names no model of the chain${guess === undefined ? '' : `; did you mean '${guess}'?`} (models: ${name})`,
        },
      ])
    }
    table.set(key, checkPrice(key, prices[key]))
  }
  return table
}
