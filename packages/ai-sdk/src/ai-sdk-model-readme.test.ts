import { readFileSync } from 'node:fs'
import { createOpenAI } from '@ai-sdk/openai'
import { fakeProvider } from '@shallot/testing'
import { expect, it } from 'vitest'
import { explainMain } from './ai-sdk-model-readme.cases.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

it('the README shows the aiSdkModel example verbatim (importing the published name)', () => {
  const example = read('./ai-sdk-model-readme.cases.ts').replace("from './index.js'", "from '@shallot/ai-sdk'")
  expect(read('../README.md')).toContain(example)
})

it('runs: the aiSdkModel example completes a run with a tool call against the real OpenAI provider', async () => {
  const provider = await fakeProvider({
    script: [
      { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] },
      (request) => ({ text: `It is an empty program: ${request.toolResults[0]?.content}` }),
    ],
  })
  try {
    const output = await explainMain(createOpenAI({ baseURL: provider.openaiBaseURL, apiKey: 'sk-fake' }))
    expect(output).toBe('It is an empty program: fn main() {}')
    expect(provider.requests.map((r) => [r.api, r.system])).toEqual([
      ['openai-responses', 'You are a terse code reviewer.'],
      ['openai-responses', 'You are a terse code reviewer.'],
    ])
  } finally {
    await provider.close()
  }
})
