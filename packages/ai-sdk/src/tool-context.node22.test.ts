import { vi } from 'vitest'

// ai 7 needs Node >= 22. The package and the cases import `ai`; here that is ai 7 (the `ai7` alias).
vi.mock('ai', async () => await import('ai7'))
vi.mock('ai/test', async () => await import('ai7/test'))

await import('./tool-context.cases.js')
