import { readFileSync } from 'node:fs'
import { ToolError } from '@shallot/core'
import { tool } from 'ai'
import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { payWithApproval } from './readme-approval-example.js'
import { explainMain } from './readme-example.js'
import { chat } from './readme-stream-example.js'
import { lastToolResults, scriptedLanguageModel } from './scripted-language-model.test-helper.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/ai-sdk'")
    expect(read('../README.md')).toContain(example)
  })

  it('shows the streamText example verbatim', () => {
    const example = read('./readme-stream-example.ts').replace("from './index.js'", "from '@shallot/ai-sdk'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: the streamText example sends the loop_detected stop as an error chunk, not an abort', async () => {
    const readFile = tool({
      inputSchema: z.object({ path: z.string() }),
      execute: async ({ path }): Promise<string> => {
        throw new ToolError('not_found', `file ${path} not found`)
      },
    })
    const model = scriptedLanguageModel([{ toolCalls: [{ name: 'read_file', input: { path: 'src/mian.rs' } }] }])
    // Watched, not muted: the hard stop goes to the UI, and anything the example would print still shows.
    const printed = vi.spyOn(console, 'error')
    const response = chat(model, readFile, new AbortController().signal)
    const body = await response.text()
    expect(printed).not.toHaveBeenCalled()
    const chunks = body.split('\n\n').flatMap((event) => (event.startsWith('data: {') ? [JSON.parse(event.slice(6))] : []))
    const errors = chunks.filter((chunk) => chunk.type === 'error')
    expect(errors.length).toBeGreaterThan(0)
    for (const error of errors) expect(error.errorText).toContain('read_file was called 5 times with the same arguments')
    expect(chunks.some((chunk) => chunk.type === 'abort')).toBe(false)
  })

  it('runs: the example recovers from a mistyped path', async () => {
    const files: Record<string, string> = { 'src/main.rs': 'fn main() {}' }
    const readFile = async (path: string) => {
      const text = files[path]
      if (text === undefined) throw new ToolError('not_found', `file ${path} not found`)
      return text
    }
    const model = scriptedLanguageModel([
      { toolCalls: [{ name: 'read_file', input: { path: 'src/mian.rs' } }] },
      { toolCalls: [{ name: 'read_file', input: { path: 'src/main.rs' } }] },
      (prompt) => ({ text: `It defines ${String(lastToolResults(prompt)[0]?.output.value)}` }),
    ])
    await expect(explainMain(model, readFile)).resolves.toBe('It defines fn main() {}')
  })

  it('shows the approval example verbatim', () => {
    const example = read('./readme-approval-example.ts').replace("from './index.js'", "from '@shallot/ai-sdk'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: an approved transfer is sent once; a denied one never, and the model reads denied_by_user', async () => {
    for (const yes of [true, false]) {
      const sent: string[] = []
      const model = scriptedLanguageModel([
        { toolCalls: [{ name: 'transfer', input: { to: 'bob', amountCents: 50_000 } }] },
        (prompt) => {
          const seen = lastToolResults(prompt)[0]?.output as { value?: unknown; reason?: string } | undefined
          return { text: `read: ${seen?.reason ?? String(seen?.value)}` }
        },
      ])
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
