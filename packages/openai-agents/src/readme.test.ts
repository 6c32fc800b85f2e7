import { readFileSync } from 'node:fs'
import { LoopError, ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { payWithApproval } from './readme-approval-example.js'
import { explainMain } from './readme-example.js'
import { lastOutputs, scriptedModel } from './testing.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

const files: Record<string, string> = { 'src/main.rs': 'fn main() {}' }
const readFile = async (path: string) => {
  const text = files[path]
  if (text === undefined) throw new ToolError('not_found', `file ${path} not found`)
  return text
}

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/openai-agents'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: the example recovers from a mistyped path', async () => {
    const model = scriptedModel([
      { calls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
      { calls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] },
      (request) => ({ text: `It defines ${lastOutputs(request)[0]}` }),
    ])
    await expect(explainMain(model, readFile)).resolves.toBe('It defines fn main() {}')
  })

  it('runs: a model that keeps asking for the missing file is stopped with loop_detected', async () => {
    const model = scriptedModel([{ calls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] }])
    const running = explainMain(model, readFile)
    await expect(running).rejects.toSatisfy(LoopError.is)
    await expect(running).rejects.toMatchObject({ kind: 'loop_detected' })
  })

  it('shows the approval example verbatim', () => {
    const example = read('./readme-approval-example.ts').replace("from './index.js'", "from '@shallot/openai-agents'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: an approved transfer is sent once; a rejected one never, and the model reads denied_by_user', async () => {
    for (const yes of [true, false]) {
      const sent: string[] = []
      const model = scriptedModel([
        { calls: [{ name: 'transfer', args: { to: 'bob', amountCents: 50_000 } }] },
        (request) => ({ text: `read: ${lastOutputs(request)[0]}` }),
      ])
      const output = await payWithApproval(
        model,
        (args) => yes && args.includes('"bob"'),
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
