import { createAgent } from '@shallot/agent'
import { defineTool, ToolError } from '@shallot/core'
import { type FakeProvider, fakeProvider } from '@shallot/testing'
import { generateText, stepCountIs, tool } from 'ai'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { aiSdkModel, shallotTools } from './index.js'
import { formats } from './wire-formats.test-helper.js'

// What the model reads of a soft error, as the provider package puts it on the wire: the stack's
// rendering byte for byte, on ai 6 with its providers and on ai 7 with theirs.

const rendered = '{"error":"not_found","message":"file src/mian.rs not found","hint":"the file is src/main.rs"}'
const notFound = () => new ToolError('not_found', 'file src/mian.rs not found', { hint: 'the file is src/main.rs' })

let provider: FakeProvider
beforeEach(async () => {
  provider = await fakeProvider()
})
afterEach(async () => {
  await provider.close()
})

/** The first call reads the missing file; the second turn echoes what the model was sent. */
function scriptMissingFile() {
  provider.script({ toolCalls: [{ id: 'call_1', name: 'read_file', args: { path: 'src/mian.rs' } }] }, (request) => ({
    text: request.toolResults[0]?.content ?? '(nothing)',
  }))
}

/** The raw tool-result part of the second request, for the error flag. */
const secondBody = () => JSON.stringify(provider.requests[1]?.body)

describe.each(formats)('a soft error on the wire, $name', (format) => {
  it('shallotTools: the model reads the stack’s JSON as is, not wrapped in {"error": …}; Anthropic marks it is_error', async () => {
    const readFile = tool({
      description: 'Read a file',
      inputSchema: z.object({ path: z.string() }),
      execute: async (): Promise<string> => {
        throw notFound()
      },
    })
    scriptMissingFile()
    const model = format.model(provider)
    const shallot = shallotTools({ read_file: readFile }, { model, effects: { read_file: 'read' } })
    const result = await generateText({
      model,
      prompt: 'read src/mian.rs',
      tools: shallot.tools,
      abortSignal: shallot.abortSignal,
      stopWhen: [stepCountIs(3), shallot.stopOnHardError],
    })
    expect(provider.requests[1]?.toolResults).toEqual([{ id: 'call_1', content: rendered }])
    expect(JSON.parse(provider.requests[1]?.toolResults[0]?.content ?? '')).toMatchObject({ error: 'not_found' })
    expect(result.text).toBe(rendered)
    expect(secondBody().includes('"is_error":true')).toBe(format.api === 'anthropic-messages')
  })

  it('aiSdkModel: the model reads the stack’s JSON as is; Anthropic marks it is_error', async () => {
    const readFile = defineTool({
      name: 'read_file',
      description: 'Read a file',
      input: z.object({ path: z.string() }),
      effect: 'read',
      execute: async (): Promise<string> => {
        throw notFound()
      },
    })
    scriptMissingFile()
    const agent = createAgent({ model: aiSdkModel(format.model(provider)), tools: [readFile] })
    const outcome = await agent.run({ input: 'read src/mian.rs' })
    expect(outcome).toMatchObject({ status: 'completed', output: rendered })
    expect(provider.requests[1]?.toolResults).toEqual([{ id: 'call_1', content: rendered }])
    expect(secondBody().includes('"is_error":true')).toBe(format.api === 'anthropic-messages')
  })
})
