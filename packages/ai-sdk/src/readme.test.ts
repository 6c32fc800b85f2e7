import { readFileSync } from 'node:fs'
import { ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { explainMain } from './readme-example.js'
import { lastToolResults, scriptedLanguageModel } from './scripted-language-model.test-helper.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/ai-sdk'")
    expect(read('../README.md')).toContain(example)
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
})
