import { readFileSync } from 'node:fs'
import { setTracingDisabled } from '@openai/agents'
import { LoopError, ToolError } from '@shallot/core'
import { type FakeProvider, fakeProvider } from '@shallot/testing'
import OpenAI from 'openai'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
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

beforeAll(() => setTracingDisabled(true))

let provider: FakeProvider | undefined
afterEach(async () => {
  await provider?.close()
  provider = undefined
})

const clientOf = (server: FakeProvider) => new OpenAI({ baseURL: server.openaiBaseURL, apiKey: 'sk-test-not-a-secret' })
const reads = (path: string) => ({ toolCalls: [{ name: 'read_file', args: { path } }] })

describe('README', { timeout: 20_000 }, () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/openai-agents'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs over the wire: the model reads the soft not_found, asks again, and answers from the file', async () => {
    provider = await fakeProvider({
      script: [reads('src/mian.rs'), reads('src/main.rs'), (request) => ({ text: `It defines ${request.toolResults.at(-1)?.content}` })],
    })
    await expect(explainMain(clientOf(provider), readFile)).resolves.toBe('It defines fn main() {}')
    expect(provider.requests[1]?.toolResults[0]?.content).toContain('"error":"not_found"')
  })

  it('runs: a model that keeps asking for the missing file is stopped with loop_detected', async () => {
    provider = await fakeProvider({ script: [reads('src/mian.rs')], onEnd: 'repeat' })
    await expect(explainMain(clientOf(provider), readFile)).rejects.toSatisfy(
      (error: unknown) => LoopError.is(error) && error.kind === 'loop_detected',
    )
  })

  it('runs: a refused key ends the run with user_input_required after one request, not retried', async () => {
    provider = await fakeProvider({ script: [{ fault: 'authentication' }], onEnd: 'repeat' })
    await expect(explainMain(clientOf(provider), readFile)).rejects.toSatisfy(
      (error: unknown) => LoopError.is(error) && error.kind === 'user_input_required',
    )
    expect(provider.requests).toHaveLength(1)
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
