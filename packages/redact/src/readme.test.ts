import { readFileSync } from 'node:fs'
import { createStack, defineTool } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { redact } from './index.js'
import { supportStack } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

const customers: Record<string, unknown> = {
  c1: { name: 'Ada', email: 'ada.lovelace@example.com', owner: 'EMP-204611', note: 'called from 203.0.113.7' },
  c2: { name: 'Grace', email: 'grace@example.com', card: '4111 1111 1111 1111' },
}
const getCustomer = defineTool({
  name: 'get_customer',
  description: 'A customer record',
  input: z.object({ id: z.string() }),
  effect: 'read',
  execute: ({ id }) => customers[id],
})

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/redact'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: the e-mail masked, the employee id hashed, the IP redacted; a record with a card withheld', async () => {
    const stack = supportStack(getCustomer, 'support-desk-key-2026')
    const ada = await stack.dispatch({ id: 'a', name: 'get_customer', args: { id: 'c1' } })
    expect(ada.content).toMatch(
      /^\{"name":"Ada","email":"a\*\*\*@example\.com","owner":"\[employee_id:[0-9a-f]{16}\]","note":"called from \[redacted:ip\]"\}$/,
    )
    const grace = await stack.dispatch({ id: 'g', name: 'get_customer', args: { id: 'c2' } })
    expect(grace.error?.code).toBe('blocked_by_policy')
    expect(grace.content).not.toContain('4111')
  })

  it('docs/errors.md quotes what the model reads of a withheld result, word for word', async () => {
    const stack = createStack({ tools: [getCustomer], middleware: [redact({ strategy: 'block' })] })
    const result = await stack.dispatch({ id: 'g', name: 'get_customer', args: { id: 'c2' } })
    expect(read('../../../docs/errors.md')).toContain(`\n${result.content}\n`)
  })
})
