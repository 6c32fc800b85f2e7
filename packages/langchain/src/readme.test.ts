import { readFileSync } from 'node:fs'
import { AIMessage, type BaseMessage } from '@langchain/core/messages'
import { fakeModel } from '@langchain/core/testing'
import { ToolError } from '@shallot/core'
import { describe, expect, it, vi } from 'vitest'
import { payWithApproval } from './readme-approval-example.js'
import { explainMain } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/langchain'")
    expect(read('../README.md')).toContain(example)
  })

  const readFile = async (path: string) => {
    if (path !== 'src/main.rs') throw new ToolError('not_found', `file ${path} not found`)
    return 'fn main() {}'
  }
  const answers = () =>
    fakeModel()
      .respondWithTools([{ name: 'read_file', args: { path: 'src/mian.rs' } }])
      .respondWithTools([{ name: 'read_file', args: { path: 'src/main.rs' } }])
      .respond((messages: BaseMessage[]) => new AIMessage(`It defines ${String(messages.at(-1)?.content)}`))
  const overloaded = () => Object.assign(new Error('Overloaded'), { status: 529 })

  it('runs: the example recovers from a mistyped path', async () => {
    const spare = fakeModel().alwaysThrow(new Error('the spare is never asked'))
    await expect(explainMain(answers(), spare, readFile)).resolves.toBe('It defines fn main() {}')
  })

  it('runs: a model that stays overloaded is retried, then the spare answers; its open circuit skips it after', async () => {
    // Full-jitter backoff drawn at 0: the retries do not wait.
    vi.spyOn(Math, 'random').mockReturnValue(0)
    let asked = 0
    const model = fakeModel()
    for (let i = 0; i < 9; i++)
      model.respond(() => {
        asked++
        return overloaded()
      })
    // Events and breakers name a model by its id: the spare's differs from the agent's.
    const spare = Object.assign(answers(), { model: 'spare-model' })
    await expect(explainMain(model, spare, readFile)).resolves.toBe('It defines fn main() {}')
    expect(asked).toBe(3)
  })

  it('runs: a refused key is not retried nor handed to the spare: the run stops with user_input_required', async () => {
    const refused = fakeModel().alwaysThrow(Object.assign(new Error('invalid x-api-key'), { status: 401 }))
    const spare = fakeModel().alwaysThrow(new Error('the spare is never asked'))
    await expect(explainMain(refused, spare, readFile)).resolves.toBe('stopped: user_input_required')
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
