import { expect, it, vi } from 'vitest'

// ai 7 needs Node >= 22. The package and the cases import `ai`; here that is ai 7 (the `ai7` alias).
vi.mock('ai', async () => await import('ai7'))

it('runs on ai 7', async () => {
  expect(Object.keys(await import('ai'))).toContain('experimental_decide') // ai 7 only
})

await import('./agent-model-policy.cases.js')
