import { vi } from 'vitest'

// ai 7 needs Node >= 22, and npm gives it @ai-sdk/openai 4 and @ai-sdk/anthropic 4: the aliases of
// the devDependencies stand in for the names the cases and the package import.
vi.mock('ai', async () => await import('ai7'))
vi.mock('@ai-sdk/openai', async () => await import('@ai-sdk/openai4'))
vi.mock('@ai-sdk/anthropic', async () => await import('@ai-sdk/anthropic4'))

await import('./shallot-model-layers.cases.js')
