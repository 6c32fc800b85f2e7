import { type ProviderFacts, providerFacts } from './provider-facts.js'
import { read } from './read.js'

/** Where a header value can be read: a fetch `Headers` (or anything with `get`), or a plain object. */
export type HeaderSource = { get(name: string): unknown } | Record<string, unknown>

/** What the classifier knows about a thrown value, read defensively (getters may throw, causes may loop). */
export interface ErrorFacts {
  /** The HTTP status (100–599) from `status`, `statusCode` or `response.status[Code]`, on the error or its causes. */
  readonly status: number | undefined
  readonly statusText: string | undefined
  /** Headers that came with the status, if any. */
  readonly headers: HeaderSource | undefined
  /** String `code`s of the error, its causes and an AggregateError's first errors (`ECONNREFUSED`, `UND_ERR_SOCKET`, …). */
  readonly codes: readonly string[]
  /** The thrown value's `name` and its constructor's name. */
  readonly names: readonly string[]
  /** Messages of the error and its causes, outermost first, deduplicated. */
  readonly messages: readonly string[]
  /** A `ZodError`'s issues. */
  readonly issues: readonly unknown[] | undefined
  /** An error message from an HTTP client's parsed response body (`response.data.error.message`). */
  readonly detail: string | undefined
  /** Provider error types (`overloaded_error`, `rate_limit_error`) of the OpenAI, Anthropic and AI SDK errors on the chain. */
  readonly types: readonly string[]
  /** What an OpenAI, Anthropic or AI SDK error says about itself: who answered, type, code, message. */
  readonly provider: ProviderFacts | undefined
}

const MAX_NODES = 16
const MAX_MESSAGES = 3

function isArray(value: unknown): value is unknown[] {
  try {
    return Array.isArray(value)
  } catch {
    return false
  }
}

function statusOf(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d{3}$/.test(value) ? Number(value) : value
  return typeof n === 'number' && Number.isInteger(n) && n >= 100 && n <= 599 ? n : undefined
}

function isHeaderSource(value: unknown): value is HeaderSource {
  return typeof value === 'object' && value !== null
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

function constructorName(value: object): string | undefined {
  try {
    const proto: unknown = Object.getPrototypeOf(value)
    return text(read(read(proto, 'constructor'), 'name'))
  } catch {
    return undefined
  }
}

function bodyDetail(response: unknown): string | undefined {
  const data = read(response, 'data')
  const error = read(data, 'error')
  return (text(read(error, 'message')) ?? text(error) ?? text(read(data, 'message')))?.slice(0, 1000)
}

function topMessage(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return text(value)
    case 'number':
    case 'bigint':
    case 'boolean':
      return String(value)
    case 'symbol':
      return value.description
    default:
      return text(read(value, 'message'))
  }
}

/**
 * Gathers what classification needs from any thrown value: status, headers, codes along the cause
 * chain, names, messages. Visits at most 16 errors, so cyclic or 10,000-deep cause chains cost nothing.
 *
 * @example
 * errorFacts(new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } })).codes // ['ECONNREFUSED']
 */
export function errorFacts(error: unknown): ErrorFacts {
  let status: number | undefined
  let statusText: string | undefined
  let headers: HeaderSource | undefined
  let detail: string | undefined
  let statusNode: unknown
  let firstProvider: ProviderFacts | undefined
  const codes: string[] = []
  const messages: string[] = []
  const top = topMessage(error)
  if (top !== undefined) messages.push(top)

  const seen = new Set<unknown>()
  const queue: unknown[] = [error]
  for (let i = 0; i < queue.length && seen.size < MAX_NODES; i++) {
    const node = queue[i]
    if (typeof node !== 'object' || node === null || seen.has(node)) continue
    seen.add(node)
    if (status === undefined) {
      const response = read(node, 'response')
      const found =
        statusOf(read(node, 'status')) ??
        statusOf(read(node, 'statusCode')) ??
        statusOf(read(response, 'status')) ??
        statusOf(read(response, 'statusCode'))
      if (found !== undefined) {
        status = found
        statusNode = node
        // `responseHeaders`: the AI SDK's APICallError.
        headers = [read(node, 'headers'), read(node, 'responseHeaders'), read(response, 'headers')].find(isHeaderSource)
        statusText = text(read(node, 'statusText')) ?? text(read(response, 'statusText'))
        detail = bodyDetail(response)
      }
    }
    firstProvider ??= providerFacts(node)
    const code = read(node, 'code')
    if (typeof code === 'string' && code.length <= 64 && !codes.includes(code)) codes.push(code)
    if (node !== error) {
      const message = text(read(node, 'message'))
      if (message !== undefined && messages.length < MAX_MESSAGES && !messages.includes(message)) messages.push(message)
    }
    const cause = read(node, 'cause')
    if (cause !== undefined) queue.push(cause)
    // The AI SDK's RetryError: its last attempt's error decides, before the earlier ones in `errors`.
    const lastError = read(node, 'lastError')
    if (lastError !== undefined) queue.push(lastError)
    const errors = read(node, 'errors')
    if (isArray(errors)) for (let j = 0; j < 4; j++) queue.push(read(errors, String(j)))
  }

  const names: string[] = []
  if (typeof error === 'object' && error !== null) {
    const name = text(read(error, 'name'))
    if (name !== undefined) names.push(name)
    const ctor = constructorName(error)
    if (ctor !== undefined && ctor !== name) names.push(ctor)
  }
  // The error that carried the status speaks for the provider; without one (a connection error), the first SDK error does.
  const provider = (statusNode === undefined ? undefined : providerFacts(statusNode)) ?? firstProvider
  if (provider?.code !== undefined && !codes.includes(provider.code)) codes.push(provider.code)
  const rawIssues = names.includes('ZodError') ? read(error, 'issues') : undefined
  return {
    status,
    statusText,
    headers,
    codes,
    names,
    messages,
    issues: isArray(rawIssues) ? rawIssues : undefined,
    detail,
    types: provider?.type === undefined ? [] : [provider.type],
    provider,
  }
}

/**
 * Reads one header, case-insensitively, from a `Headers`-like object or a plain record.
 *
 * @example
 * headerOf({ 'Retry-After': '7' }, 'retry-after') // '7'
 */
export function headerOf(headers: HeaderSource | undefined, name: string): unknown {
  if (headers === undefined) return undefined
  const get = read(headers, 'get')
  if (typeof get === 'function') {
    try {
      return (get as (name: string) => unknown).call(headers, name)
    } catch {
      return undefined
    }
  }
  const direct = read(headers, name)
  if (direct !== undefined) return isArray(direct) ? direct[0] : direct
  let keys: string[]
  try {
    keys = Object.keys(headers).slice(0, 100)
  } catch {
    return undefined
  }
  const key = keys.find((k) => k.toLowerCase() === name)
  if (key === undefined) return undefined
  const value = read(headers, key)
  return isArray(value) ? value[0] : value
}
