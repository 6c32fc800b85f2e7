import { readFileSync } from 'node:fs'
import { AIMessage, type BaseMessage } from '@langchain/core/messages'
import { fakeModel } from '@langchain/core/testing'
import { ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { payWithApproval } from './readme-approval-example.js'
import { explainMain } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/langchain'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: the example recovers from a mistyped path', async () => {
    const readFile = async (path: string) => {
      if (path !== 'src/main.rs') throw new ToolError('not_found', `file ${path} not found`)
      return 'fn main() {}'
    }
    const model = fakeModel()
      .respondWithTools([{ name: 'read_file', args: { path: 'src/mian.rs' } }])
      .respondWithTools([{ name: 'read_file', args: { path: 'src/main.rs' } }])
      .respond((messages: BaseMessage[]) => new AIMessage(`It defines ${String(messages.at(-1)?.content)}`))
    await expect(explainMain(model, readFile)).resolves.toBe('It defines fn main() {}')
  })

  it('shows the approval example verbatim', () => {
    const example = read('./readme-approval-example.ts').replace("from './index.js'", "from '@shallot/langchain'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: an approved transfer is sent once; a rejected one never, and the model reads denied_by_user', async () => {
    for (const yes of [true, false]) {
      const sent: string[] = []
      const model = fakeModel()
        .respondWithTools([{ name: 'transfer', args: { to: 'bob', amountCents: 50_000 } }])
        .respond((messages: BaseMessage[]) => new AIMessage(`read: ${String(messages.at(-1)?.content)}`))
      const output = await payWithApproval(
        model,
        () => yes,
        (to, cents) => {
          sent.push(`${cents} to ${to}`)
          return `sent ${cents} to ${to}`
        },
      )
      expect(output).toEqual(yes ? 'read: sent 50000 to bob' : expect.stringContaining('"error":"denied_by_user"'))
      expect(sent).toEqual(yes ? ['50000 to bob'] : [])
    }
  })
})
