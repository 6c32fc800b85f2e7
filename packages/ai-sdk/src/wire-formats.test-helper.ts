// Test support: the three wire formats fakeProvider() speaks, each driven by its real AI SDK provider package.
import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import type { FakeApi, FakeProvider } from '@shallot/testing'
import type { LanguageModel } from 'ai'

export interface Format {
  readonly name: string
  readonly api: FakeApi
  readonly model: (provider: FakeProvider) => LanguageModel
}

export const formats: Format[] = [
  {
    name: 'OpenAI Chat Completions',
    api: 'openai-chat',
    model: (p) => createOpenAI({ baseURL: p.openaiBaseURL, apiKey: 'sk-fake' }).chat('gpt-4o-mini'),
  },
  {
    name: 'OpenAI Responses',
    api: 'openai-responses',
    model: (p) => createOpenAI({ baseURL: p.openaiBaseURL, apiKey: 'sk-fake' }).responses('gpt-4o-mini'),
  },
  {
    name: 'Anthropic Messages',
    api: 'anthropic-messages',
    model: (p) => createAnthropic({ baseURL: p.anthropicBaseURL, apiKey: 'sk-ant-fake' }).messages('claude-sonnet-4-5'),
  },
]
