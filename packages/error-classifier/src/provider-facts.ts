import { read } from './read.js'

/** What a model provider's error says about itself, read from the OpenAI, Anthropic and AI SDK error shapes. */
export interface ProviderFacts {
  /** Who answered, for the model's text: `OpenAI API`, `Anthropic API`, `OpenAI-compatible API`, `AI SDK provider`. */
  readonly provider: string
  /** The provider's error `type` (`overloaded_error`, `rate_limit_error`, `insufficient_quota`). */
  readonly type: string | undefined
  /** The provider's error `code` (`insufficient_quota`, `rate_limit_exceeded`, `invalid_api_key`). */
  readonly code: string | undefined
  /** The provider's own message from its error body, unsanitized. */
  readonly message: string | undefined
}

type Bag = Record<string, unknown>

const isBag = (value: unknown): value is Bag => typeof value === 'object' && value !== null
// Enough for any real provider message; the sanitizer caps what the model reads far below this.
const MAX_TEXT = 4096
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value.slice(0, MAX_TEXT) : undefined)
const label = (value: unknown): string | undefined => {
  const s = text(value)
  return s !== undefined && s.length <= 64 && /^[A-Za-z0-9_.-]+$/.test(s) ? s : undefined
}

/** The constructor names up the prototype chain (`RateLimitError`, `APIError`, `OpenAIError`, `Error`). */
function lineage(value: object): string[] {
  const names: string[] = []
  try {
    for (let proto: unknown = Object.getPrototypeOf(value); isBag(proto) && names.length < 8; proto = Object.getPrototypeOf(proto)) {
      const name = text(read(read(proto, 'constructor'), 'name'))
      if (name !== undefined) names.push(name)
    }
  } catch {
    // A proxy's getPrototypeOf trap threw: the names read so far are all there is.
  }
  return names
}

/**
 * Who threw: the OpenAI and Anthropic SDKs by their base classes (every APIError subclass extends
 * `OpenAIError` / `AnthropicError`), the AI SDK by its error names; `undefined` for anything else.
 */
function providerOf(node: object, body: Bag | undefined): string | undefined {
  const names = lineage(node)
  if (names.includes('OpenAIError')) return 'OpenAI API'
  if (names.includes('AnthropicError')) return 'Anthropic API'
  const name = text(read(node, 'name'))
  if (name !== 'AI_APICallError' && name !== 'AI_RetryError') return undefined
  // The AI SDK does not say which provider it called; the error body's shape does.
  if (body !== undefined && read(body, 'envelope') === 'anthropic') return 'Anthropic API'
  if (body !== undefined && read(body, 'envelope') === 'openai') return 'OpenAI-compatible API'
  return 'AI SDK provider'
}

/**
 * The provider's error object: OpenAI's `error` (`{ message, type, param, code }`), Anthropic's
 * `error.error` inside `{ type: 'error', error }`, or the same two under the AI SDK's `data`.
 */
function errorBody(node: object): Bag | undefined {
  for (const key of ['error', 'data']) {
    const outer = read(node, key)
    if (!isBag(outer)) continue
    const inner = read(outer, 'error')
    if (read(outer, 'type') === 'error' && isBag(inner)) return { envelope: 'anthropic', ...pick(inner) }
    if (isBag(inner)) return { envelope: 'param' in inner ? 'openai' : 'other', ...pick(inner) }
    return { envelope: 'param' in outer ? 'openai' : 'other', ...pick(outer) }
  }
  return undefined
}

function pick(body: Bag): Bag {
  return { type: read(body, 'type'), code: read(body, 'code'), message: read(body, 'message') }
}

/**
 * Reads {@link ProviderFacts} from one error (the one that carried the status, or a connection
 * error without one). Only the error body's `type`, `code` and `message` are read: never headers,
 * the request, or the URL, which may carry keys.
 *
 * @example
 * providerFacts(openAiRateLimitError)
 * // { provider: 'OpenAI API', type: 'insufficient_quota', code: 'insufficient_quota', message: 'You exceeded your current quota, …' }
 */
export function providerFacts(node: unknown): ProviderFacts | undefined {
  if (!isBag(node)) return undefined
  const body = errorBody(node)
  const provider = providerOf(node, body)
  if (provider === undefined) return undefined
  return {
    provider,
    type: label(body?.type) ?? label(read(node, 'type')),
    code: label(body?.code) ?? label(read(node, 'code')),
    message: text(body?.message),
  }
}
