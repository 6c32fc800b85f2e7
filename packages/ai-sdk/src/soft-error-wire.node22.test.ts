import { expect, it, vi } from 'vitest'

// ai 7 needs Node >= 22, and npm gives it @ai-sdk/openai 4 and @ai-sdk/anthropic 4: the aliases of
// the devDependencies stand in for the names the cases and the package import.
vi.mock('ai', async () => await import('ai7'))
vi.mock('@ai-sdk/openai', async () => await import('@ai-sdk/openai4'))
vi.mock('@ai-sdk/anthropic', async () => await import('@ai-sdk/anthropic4'))

it('runs on ai 7 with the version 4 providers', async () => {
  expect(Object.keys(await import('ai'))).toContain('experimental_decide') // ai 7 only
  const { createOpenAI } = await import('@ai-sdk/openai')
  expect(createOpenAI({ apiKey: 'sk-fake' }).chat('gpt-4o-mini').specificationVersion).toBe('v4')
})

await import('./soft-error-wire.cases.js')
