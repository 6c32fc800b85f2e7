import { LoopError } from '@shallot/core'
import { stuckLoop } from '@shallot/stuck-loop'
import { generateText, stepCountIs, streamText, tool } from 'ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { isSoftFailure, shallotTools } from './index.js'
import { lastToolResults, scriptedLanguageModel } from './scripted-language-model.test-helper.js'

// Shared by the ai 6 run (repair-tool-call.test.ts) and the ai 7 run (repair-tool-call.node22.test.ts).

function readFileTool() {
  const asked: string[] = []
  const readFile = tool({
    description: 'Read a file',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => {
      asked.push(path)
      return `contents of ${path}`
    },
  })
  return { readFile, asked }
}

const truncated = { name: 'read_file', rawInput: '{"path":"src/mian.r' }

describe('malformed tool-call JSON goes through the stack', () => {
  it('the model reads invalid_arguments from the stack, and fixes its call', async () => {
    const { readFile, asked } = readFileTool()
    const model = scriptedLanguageModel([
      { toolCalls: [truncated] },
      { toolCalls: [{ name: 'read_file', input: { path: 'src/main.rs' } }] },
      { text: 'done' },
    ])
    const shallot = shallotTools({ read_file: readFile })
    const result = await generateText({
      model,
      prompt: 'read src/main.rs',
      tools: shallot.tools,
      experimental_repairToolCall: shallot.repairToolCall,
      abortSignal: shallot.abortSignal,
      stopWhen: [stepCountIs(8), shallot.stopOnHardError],
    })

    const [seen] = lastToolResults(model.doGenerateCalls[1]?.prompt ?? [])
    expect(seen?.output.type).toBe('text')
    const text = String(seen?.output.value)
    expect(JSON.parse(text)).toMatchObject({ error: 'invalid_arguments', hint: 'send the arguments as one JSON object' })
    expect(text).toContain('arguments are not valid JSON')
    const first = result.steps[0]?.toolResults[0]?.output
    expect(isSoftFailure(first) && first.error.code).toBe('invalid_arguments')
    expect(asked).toEqual(['src/main.rs']) // the truncated argument never executed
    expect(result.text).toBe('done')
  })

  it('a model that sends malformed JSON every turn is stopped by stuck-loop (loop_detected), not after 8 blind steps', async () => {
    const { readFile, asked } = readFileTool()
    const model = scriptedLanguageModel([{ toolCalls: [truncated] }])
    const shallot = shallotTools({ read_file: readFile }, { middleware: [stuckLoop({ refuseAfter: 2, stopAfter: 4 })] })
    const generation = generateText({
      model,
      prompt: 'read src/main.rs',
      tools: shallot.tools,
      experimental_repairToolCall: shallot.repairToolCall,
      abortSignal: shallot.abortSignal,
      stopWhen: [stepCountIs(8), shallot.stopOnHardError],
    })
    await expect(generation).rejects.toSatisfy(LoopError.is)
    await expect(generation).rejects.toMatchObject({ kind: 'loop_detected', details: { tool: 'read_file' } })
    expect(model.doGenerateCalls).toHaveLength(4)
    expect(asked).toEqual([])
  })

  it('without the hook the SDK answers with its own text and stuck-loop never sees the calls (why the hook exists)', async () => {
    const { readFile } = readFileTool()
    const model = scriptedLanguageModel([{ toolCalls: [truncated] }])
    const shallot = shallotTools({ read_file: readFile }, { middleware: [stuckLoop({ refuseAfter: 2, stopAfter: 4 })] })
    const result = await generateText({
      model,
      prompt: 'read src/main.rs',
      tools: shallot.tools,
      abortSignal: shallot.abortSignal,
      stopWhen: [stepCountIs(8), shallot.stopOnHardError],
    })
    expect(result.steps).toHaveLength(8)
    expect(shallot.error).toBeUndefined()
  })

  it('in streamText too: the stream ends with the loop_detected error', async () => {
    const { readFile } = readFileTool()
    const shallot = shallotTools({ read_file: readFile }, { middleware: [stuckLoop({ refuseAfter: 2, stopAfter: 4 })] })
    const result = streamText({
      model: scriptedLanguageModel([{ toolCalls: [truncated] }]),
      prompt: 'read src/main.rs',
      tools: shallot.tools,
      experimental_repairToolCall: shallot.repairToolCall,
      experimental_transform: shallot.streamTransform,
      stopWhen: [stepCountIs(8), shallot.stopOnHardError],
      onError: () => {},
    })
    await expect(result.text).rejects.toMatchObject({ kind: 'loop_detected' })
  })

  it('a huge malformed argument is refused by size before anything parses it', async () => {
    const { readFile, asked } = readFileTool()
    const model = scriptedLanguageModel([
      { toolCalls: [{ name: 'read_file', rawInput: `{"path":"${'a'.repeat(300_000)}` }] },
      { text: 'ok' },
    ])
    const shallot = shallotTools({ read_file: readFile })
    const result = await generateText({
      model,
      prompt: 'read it',
      tools: shallot.tools,
      experimental_repairToolCall: shallot.repairToolCall,
      stopWhen: stepCountIs(3),
    })
    const first = result.steps[0]?.toolResults[0]?.output
    expect(isSoftFailure(first) && first.error).toMatchObject({ code: 'invalid_arguments', message: expect.stringContaining('too large') })
    expect(String(lastToolResults(model.doGenerateCalls[1]?.prompt ?? [])[0]?.output.value).length).toBeLessThan(1000)
    expect(asked).toEqual([])
  })

  it('leaves unknown tool names and tools it does not wrap to the SDK', async () => {
    const { readFile } = readFileTool()
    const shallot = shallotTools({ read_file: readFile, ask_user: tool({ inputSchema: z.object({ q: z.string() }) }) })
    const repair = (toolName: string) =>
      shallot.repairToolCall({
        toolCall: { type: 'tool-call', toolCallId: 'c1', toolName, input: '{"q":' },
        error: Object.assign(new Error('bad'), { name: 'AI_InvalidToolInputError' }),
        tools: shallot.tools,
        messages: [],
        system: undefined,
        inputSchema: async () => ({}),
      } as never)
    await expect(repair('ask_user')).resolves.toBeNull()
    await expect(repair('read_file')).resolves.toMatchObject({ toolName: 'read_file', input: JSON.stringify('{"q":') })
    const unknown = await shallot.repairToolCall({
      toolCall: { type: 'tool-call', toolCallId: 'c2', toolName: 'nope', input: '{}' },
      error: Object.assign(new Error('no such tool'), { name: 'AI_NoSuchToolError' }),
    } as never)
    expect(unknown).toBeNull()
  })
})
