import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import { closest } from '@shallot/core/kit'
import type { LanguageModel } from 'ai'
import { UsageError } from '../usage.js'

/** Where a provider's key and base URL come from, and how its models are made. */
interface Provider {
  readonly keyVar: string
  readonly urlVar: string
  readonly make: (settings: { apiKey: string; baseURL?: string }, id: string) => LanguageModel
}

/**
 * The providers `--model provider:id` names. `openai` is Chat Completions, which every
 * OpenAI-compatible server (vLLM, Ollama, LM Studio) speaks; `openai-responses` is OpenAI's Responses API.
 */
export const PROVIDERS: Readonly<Record<string, Provider>> = Object.freeze({
  openai: { keyVar: 'OPENAI_API_KEY', urlVar: 'OPENAI_BASE_URL', make: (s, id) => createOpenAI(s).chat(id) },
  'openai-responses': { keyVar: 'OPENAI_API_KEY', urlVar: 'OPENAI_BASE_URL', make: (s, id) => createOpenAI(s).responses(id) },
  anthropic: { keyVar: 'ANTHROPIC_API_KEY', urlVar: 'ANTHROPIC_BASE_URL', make: (s, id) => createAnthropic(s)(id) },
})

/** A model ready to call, and what must never be printed (its key). */
export interface ResolvedModel {
  readonly spec: string
  readonly model: LanguageModel
  readonly secrets: readonly string[]
  /** Where requests go, for messages: the base URL, or the provider's default. */
  readonly endpoint: string
  /** The variable that sets the base URL. */
  readonly urlVar: string
  /** The provider's name (`openai`), its base URL when one is set, and the variable its key comes from. */
  readonly provider: string
  readonly baseURL: string | undefined
  readonly keyVar: string
}

const MAX_MODEL_ID = 256

/**
 * `openai:gpt-4o-mini` → the provider's language model, with the key and base URL from the
 * provider's usual environment variables. Every problem is a one-line `UsageError` naming the fix.
 *
 * @example
 * const { model } = resolveModel('anthropic:claude-sonnet-4-5', process.env)
 */
export function resolveModel(spec: string, env: NodeJS.ProcessEnv): ResolvedModel {
  const colon = spec.indexOf(':')
  const names = Object.keys(PROVIDERS)
  if (colon < 0) {
    throw new UsageError(
      `--model "${short(spec)}" names no provider; write provider:model-id, e.g. openai:${spec || 'gpt-4o-mini'} (providers: ${names.join(', ')})`,
    )
  }
  const name = spec.slice(0, colon)
  const id = spec.slice(colon + 1)
  const provider = Object.hasOwn(PROVIDERS, name) ? PROVIDERS[name] : undefined
  if (provider === undefined) {
    const guess = closest(name, names)
    throw new UsageError(
      `unknown provider "${short(name)}" in --model${guess === undefined ? '' : `; did you mean '${guess}'?`} (providers: ${names.join(', ')})`,
    )
  }
  if (id.trim() === '')
    throw new UsageError(
      `--model ${name}: has no model id; write ${name}:<model-id>, e.g. ${name}:${name === 'anthropic' ? 'claude-sonnet-4-5' : 'gpt-4o-mini'}`,
    )
  if (id.length > MAX_MODEL_ID || [...id].some((ch) => ch.charCodeAt(0) < 32 || /\s/.test(ch)))
    throw new UsageError(
      `--model ${name}: "${short(id)}" is not a model id (no spaces or control characters, at most ${MAX_MODEL_ID} characters)`,
    )
  const apiKey = env[provider.keyVar]
  if (apiKey === undefined || apiKey.trim() === '') {
    throw new UsageError(`${provider.keyVar} is not set; export ${provider.keyVar}=… (a local OpenAI-compatible server takes any value)`)
  }
  const baseURL = env[provider.urlVar]
  if (baseURL !== undefined && baseURL !== '') {
    let url: URL | undefined
    try {
      url = new URL(baseURL)
    } catch {}
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new UsageError(`${provider.urlVar} is not an http(s) URL: "${short(withoutUserInfo(baseURL))}"`)
    // fetch refuses such a URL at the first request; the password would also land in messages and logs.
    if (url.username !== '' || url.password !== '')
      throw new UsageError(
        `${provider.urlVar} holds credentials (user:password@); put the key in ${provider.keyVar} and give the URL without them: ${withoutCredentials(baseURL)}`,
      )
  }
  const settings = baseURL === undefined || baseURL === '' ? { apiKey } : { apiKey, baseURL }
  return {
    spec,
    model: provider.make(settings, id),
    secrets: [apiKey],
    endpoint: settings.baseURL ?? `the ${name} API`,
    urlVar: provider.urlVar,
    provider: name,
    baseURL: settings.baseURL,
    keyVar: provider.keyVar,
  }
}

function withoutCredentials(url: string): string {
  const parsed = new URL(url)
  parsed.username = ''
  parsed.password = ''
  return parsed.toString()
}

/** A value that is not a URL may still hold `user:password@`: everything before the `@` goes. */
const withoutUserInfo = (text: string) => text.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/@]*@/i, '$1…@')

const short = (text: string) => (text.length > 60 ? `${text.slice(0, 59)}…` : text)
