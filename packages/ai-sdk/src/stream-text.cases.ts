import { LoopError, ToolError } from '@shallot/core'
import { stuckLoop } from '@shallot/stuck-loop'
import { createUIMessageStream, stepCountIs, streamText, tool, type UIMessageChunk } from 'ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { shallotTools } from './index.js'
import { scriptedLanguageModel } from './scripted-language-model.test-helper.js'

// Shared by the ai 6 run (stream-text.test.ts) and the ai 7 run (stream-text.node22.test.ts).

function stubbornReadFile() {
  let runs = 0
  const readFile = tool({
    description: 'Read a file',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }): Promise<string> => {
      runs++
      throw new ToolError('not_found', `file ${path} not found`)
    },
  })
  const model = scriptedLanguageModel([{ text: 'let me look', toolCalls: [{ name: 'read_file', input: { path: 'src/mian.rs' } }] }])
  return { readFile, model, runs: () => runs }
}

async function collect<T>(stream: AsyncIterable<T>): Promise<{ parts: T[]; thrown: unknown }> {
  const parts: T[] = []
  try {
    for await (const part of stream) parts.push(part)
    return { parts, thrown: undefined }
  } catch (error) {
    return { parts, thrown: error }
  }
}

describe('streamText: a hard stop is an error, not an abort', () => {
  it('loop_detected from stuck-loop: an error part, onError, and every promise rejects with the LoopError', async () => {
    const { readFile, model, runs } = stubbornReadFile()
    const shallot = shallotTools({ read_file: readFile }, { middleware: [stuckLoop({ refuseAfter: 2, stopAfter: 4 })] })
    const onError: unknown[] = []
    const result = streamText({
      model,
      prompt: 'What does src/main.rs do?',
      tools: shallot.tools,
      experimental_transform: shallot.streamTransform,
      stopWhen: [stepCountIs(20), shallot.stopOnHardError],
      onError: ({ error }) => {
        onError.push(error)
      },
    })

    const { parts, thrown } = await collect(result.fullStream)

    expect(LoopError.is(thrown) && thrown.kind).toBe('loop_detected')
    const errors = parts.filter((part) => part.type === 'error')
    expect(errors).toHaveLength(1)
    expect(errors[0]?.type === 'error' && errors[0].error).toBe(thrown)
    expect(parts.some((part) => part.type === 'abort')).toBe(false)
    expect(onError).toEqual([thrown])
    await expect(result.text).rejects.toSatisfy(LoopError.is)
    await expect(result.steps).rejects.toBe(thrown)
    await expect(result.finishReason).rejects.toBe(thrown)
    expect(runs()).toBe(2) // two real failures, then refusals, then the stop
    expect(model.doStreamCalls).toHaveLength(4)
    expect(shallot.error).toBe(thrown)
  })

  it('with abortSignal passed too, the stop still arrives as the LoopError, not as an abort', async () => {
    const streamErrors: unknown[] = []
    const { readFile, model } = stubbornReadFile()
    const shallot = shallotTools({ read_file: readFile }, { maxSteps: 2 })
    const result = streamText({
      model,
      prompt: 'What does src/main.rs do?',
      tools: shallot.tools,
      abortSignal: shallot.abortSignal,
      experimental_transform: shallot.streamTransform,
      stopWhen: [stepCountIs(20), shallot.stopOnHardError],
      // Without onError, streamText prints each stream error to the console: here it is the stop, checked below.
      onError: ({ error }) => void streamErrors.push(error),
    })
    const { parts, thrown } = await collect(result.fullStream)
    expect(LoopError.is(thrown) && thrown.kind).toBe('budget_exhausted')
    expect(streamErrors).toEqual([thrown])
    expect(parts.filter((part) => part.type === 'error' || part.type === 'abort').map((part) => part.type)).toEqual(['error'])
    await expect(result.text).rejects.toBe(thrown)
  })

  it("the UI message stream sends the error (through the UI stream's onError), never abort", async () => {
    const { readFile, model } = stubbornReadFile()
    const shallot = shallotTools({ read_file: readFile }, { middleware: [stuckLoop({ refuseAfter: 2, stopAfter: 4 })] })
    const streamErrors: unknown[] = []
    const result = streamText({
      model,
      prompt: 'What does src/main.rs do?',
      tools: shallot.tools,
      experimental_transform: shallot.streamTransform,
      stopWhen: [stepCountIs(20), shallot.stopOnHardError],
      onError: ({ error }) => void streamErrors.push(error),
    })
    const shown: unknown[] = []
    const { parts, thrown } = await collect<UIMessageChunk>(
      result.toUIMessageStream({
        onError: (error) => {
          shown.push(error)
          return LoopError.is(error) ? `stopped: ${error.kind}` : 'error'
        },
      }),
    )
    expect(LoopError.is(thrown) && thrown.kind).toBe('loop_detected')
    expect(parts.filter((part) => part.type === 'error')).toEqual([{ type: 'error', errorText: 'stopped: loop_detected' }])
    expect(parts.some((part) => part.type === 'abort')).toBe(false)
    expect(shown.every(LoopError.is)).toBe(true)
    expect(streamErrors).toEqual([thrown])
  })

  it('createUIMessageStream: the merged stream ends with error chunks carrying the LoopError, and no abort', async () => {
    const { readFile, model } = stubbornReadFile()
    const shallot = shallotTools({ read_file: readFile }, { middleware: [stuckLoop({ refuseAfter: 2, stopAfter: 4 })] })
    const seen: unknown[] = []
    const streamErrors: unknown[] = []
    const stream = createUIMessageStream({
      execute({ writer }) {
        const result = streamText({
          model,
          prompt: 'What does src/main.rs do?',
          tools: shallot.tools,
          experimental_transform: shallot.streamTransform,
          stopWhen: [stepCountIs(20), shallot.stopOnHardError],
          onError: ({ error }) => void streamErrors.push(error),
        })
        writer.merge(result.toUIMessageStream({ onError: (error) => (LoopError.is(error) ? `stopped: ${error.kind}` : 'error') }))
      },
      onError: (error) => {
        seen.push(error)
        return LoopError.is(error) ? `stopped: ${error.kind}` : 'error'
      },
    })
    const { parts, thrown } = await collect<UIMessageChunk>(stream)
    expect(thrown).toBeUndefined()
    const errors = parts.filter((part) => part.type === 'error')
    expect(errors.length).toBeGreaterThan(0)
    expect(errors.every((part) => part.type === 'error' && part.errorText === 'stopped: loop_detected')).toBe(true)
    expect(parts.some((part) => part.type === 'abort')).toBe(false)
    expect(seen.length).toBeGreaterThan(0)
    expect(seen.every(LoopError.is)).toBe(true)
    expect(streamErrors).toHaveLength(1)
    expect(streamErrors.every(LoopError.is)).toBe(true)
  })

  it("the caller's own abort stays an abort part: no error, no onError", async () => {
    let started!: () => void
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const hang = tool({
      description: 'Runs until aborted',
      inputSchema: z.object({}),
      execute: (_input, { abortSignal }) =>
        new Promise<string>((_resolve, reject) => {
          started()
          abortSignal?.addEventListener('abort', () => reject(abortSignal.reason), { once: true })
        }),
    })
    const controller = new AbortController()
    const shallot = shallotTools({ hang }, { signal: controller.signal })
    const onError: unknown[] = []
    const result = streamText({
      model: scriptedLanguageModel([{ toolCalls: [{ name: 'hang', input: {} }] }]),
      prompt: 'go',
      tools: shallot.tools,
      abortSignal: shallot.abortSignal,
      experimental_transform: shallot.streamTransform,
      stopWhen: [stepCountIs(5), shallot.stopOnHardError],
      onError: ({ error }) => {
        onError.push(error)
      },
    })
    const collecting = collect(result.fullStream)
    await running
    controller.abort(new Error('the user pressed stop'))
    const { parts, thrown } = await collecting
    expect(thrown).toBeUndefined()
    expect(parts.at(-1)?.type).toBe('abort')
    expect(parts.some((part) => part.type === 'error')).toBe(false)
    expect(onError).toEqual([])
  })
})
