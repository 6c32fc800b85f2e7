import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { LoopError, type Middleware, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { generateText, jsonSchema, stepCountIs, tool } from 'ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { isSoftFailure, shallotTools } from './index.js'
import { lastToolResults, scriptedLanguageModel } from './scripted-language-model.test-helper.js'

function projectFiles(files: Record<string, string>) {
  const asked: string[] = []
  const readFile = tool({
    description: 'Read a UTF-8 text file from the project',
    inputSchema: z.object({ path: z.string().min(1) }),
    execute: async ({ path }) => {
      asked.push(path)
      const text = files[path]
      if (text === undefined)
        throw new ToolError('not_found', `file ${path} not found`, { hint: `files: ${Object.keys(files).join(', ')}` })
      return text
    },
  })
  return { readFile, asked }
}

describe('shallotTools in a real generateText loop', () => {
  it('lets the model read a soft not_found for src/mian.rs and recover with src/main.rs', async () => {
    const { readFile, asked } = projectFiles({ 'src/main.rs': 'fn main() { println!("hello") }' })
    const model = scriptedLanguageModel([
      { toolCalls: [{ name: 'read_file', input: { path: 'src/mian.rs' } }] },
      (prompt) => {
        const [seen] = lastToolResults(prompt)
        return seen?.output.type === 'text' && String(seen.output.value).includes('not_found')
          ? { toolCalls: [{ name: 'read_file', input: { path: 'src/main.rs' } }] }
          : { text: 'gave up' }
      },
      (prompt) => ({ text: `main.rs says: ${String(lastToolResults(prompt)[0]?.output.value)}` }),
    ])
    const shallot = shallotTools({ read_file: readFile }, { effects: { read_file: 'read' } })

    const result = await generateText({
      model,
      prompt: 'What does src/main.rs do?',
      tools: shallot.tools,
      abortSignal: shallot.abortSignal,
      stopWhen: [stepCountIs(10), shallot.stopOnHardError],
    })

    expect(asked).toEqual(['src/mian.rs', 'src/main.rs'])
    expect(result.text).toBe('main.rs says: fn main() { println!("hello") }')
    const firstOutput = result.steps[0]?.toolResults[0]?.output
    expect(isSoftFailure(firstOutput) && firstOutput.error.code).toBe('not_found')
    expect(lastToolResults(model.doGenerateCalls[1]?.prompt ?? [])).toEqual([
      expect.objectContaining({
        toolName: 'read_file',
        output: { type: 'text', value: '{"error":"not_found","message":"file src/mian.rs not found","hint":"files: src/main.rs"}' },
      }),
    ])
    expect(shallot.error).toBeUndefined()
  })

  it('opens the circuit after two failures: the third call gets circuit_open without the tool running', async () => {
    let runs = 0
    const status = tool({
      description: 'Status of the deploy service',
      inputSchema: z.object({}),
      execute: async (): Promise<string> => {
        runs++
        throw new ToolError('upstream_error', 'deploy service answered HTTP 503')
      },
    })
    const call = { toolCalls: [{ name: 'deploy_status', input: {} }] }
    const model = scriptedLanguageModel([call, call, call, { text: 'The deploy service is down; try later.' }])
    const shallot = shallotTools(
      { deploy_status: status },
      { middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }) })], clock: manualClock() },
    )

    const result = await generateText({ model, prompt: 'Is the deploy healthy?', tools: shallot.tools, stopWhen: stepCountIs(10) })

    expect(runs).toBe(2)
    const codes = result.steps.flatMap((step) => step.toolResults.map((r) => (isSoftFailure(r.output) ? r.output.error.code : 'ok')))
    expect(codes).toEqual(['upstream_error', 'upstream_error', 'circuit_open'])
    const seen = lastToolResults(model.doGenerateCalls[3]?.prompt ?? [])[0]
    expect(seen?.output.type).toBe('text')
    expect(String(seen?.output.value)).toContain('temporarily unavailable: circuit breaker open')
    expect(result.text).toBe('The deploy service is down; try later.')
  })

  it('answers invalid arguments softly, validated once by the stack, and the model can fix them', async () => {
    const { readFile, asked } = projectFiles({ 'a.txt': 'A' })
    const model = scriptedLanguageModel([
      { toolCalls: [{ name: 'read_file', input: { file: 'a.txt' } }] },
      { toolCalls: [{ name: 'read_file', input: { path: 'a.txt' } }] },
      { text: 'done' },
    ])
    const shallot = shallotTools({ read_file: readFile })
    const result = await generateText({ model, prompt: 'read a.txt', tools: shallot.tools, stopWhen: stepCountIs(5) })
    const first = result.steps[0]?.toolResults[0]?.output
    expect(isSoftFailure(first) && first.error).toMatchObject({ code: 'invalid_arguments' })
    expect(isSoftFailure(first) && first.error.hint).toBe('expected { path: string }')
    expect(asked).toEqual(['a.txt'])
  })

  it('validates a jsonSchema() tool with the JSON Schema itself', async () => {
    const seen: unknown[] = []
    const echo = tool({
      description: 'Echo a number',
      inputSchema: jsonSchema<{ n: number }>({ type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }),
      execute: async (input) => {
        seen.push(input)
        return input.n
      },
    })
    const model = scriptedLanguageModel([
      { toolCalls: [{ name: 'echo', input: { n: 'seven' } }] },
      { toolCalls: [{ name: 'echo', input: { n: 7 } }] },
      { text: 'done' },
    ])
    const shallot = shallotTools({ echo })
    const result = await generateText({ model, prompt: 'echo 7', tools: shallot.tools, stopWhen: stepCountIs(5) })
    const outputs = result.steps.flatMap((step) => step.toolResults.map((r) => r.output))
    expect(isSoftFailure(outputs[0]) && outputs[0].error.code).toBe('invalid_arguments')
    expect(outputs[1]).toBe(7)
    expect(seen).toEqual([{ n: 7 }])
  })
})

describe('hard errors stop the generation', () => {
  it('rejects generateText with the LoopError before the next model call (budget exhausted)', async () => {
    const { readFile } = projectFiles({ 'a.txt': 'A' })
    const call = { toolCalls: [{ name: 'read_file', input: { path: 'a.txt' } }] }
    const model = scriptedLanguageModel([call, call, { text: 'never reached' }])
    const shallot = shallotTools({ read_file: readFile }, { limits: { maxSteps: 1 } })

    const generation = generateText({
      model,
      prompt: 'read a.txt twice',
      tools: shallot.tools,
      abortSignal: shallot.abortSignal,
      stopWhen: stepCountIs(10),
    })

    await expect(generation).rejects.toSatisfy(LoopError.is)
    await expect(generation).rejects.toMatchObject({ kind: 'budget_exhausted' })
    expect(model.doGenerateCalls).toHaveLength(2)
    expect(shallot.error?.kind).toBe('budget_exhausted')
    expect(shallot.abortSignal.reason).toBe(shallot.error)
  })

  it('rejects even when the hard stop happens on the last allowed step, through stopOnHardError', async () => {
    const { readFile } = projectFiles({ 'a.txt': 'A' })
    const call = { toolCalls: [{ name: 'read_file', input: { path: 'a.txt' } }] }
    const withStop = shallotTools({ read_file: readFile }, { limits: { maxSteps: 1 } })
    const generation = generateText({
      model: scriptedLanguageModel([call, call]),
      prompt: 'read a.txt twice',
      tools: withStop.tools,
      stopWhen: [stepCountIs(2), withStop.stopOnHardError],
    })
    await expect(generation).rejects.toMatchObject({ kind: 'budget_exhausted' })

    // Without it, the SDK ends the generation normally after its last step; the error is still on the set.
    const without = shallotTools({ read_file: readFile }, { maxSteps: 1 }) // the deprecated spelling still works
    const result = await generateText({
      model: scriptedLanguageModel([call, call]),
      prompt: 'read a.txt twice',
      tools: without.tools,
      stopWhen: stepCountIs(2),
    })
    expect(result.steps).toHaveLength(2)
    expect(without.error?.kind).toBe('budget_exhausted')
  })

  it('aborts the sibling calls of the step when one call stops the run', async () => {
    let siblingSignal: AbortSignal | undefined
    const slow = tool({
      description: 'Waits until aborted',
      inputSchema: z.object({}),
      execute: async (_input, { abortSignal }) => {
        siblingSignal = abortSignal
        return new Promise<string>((_resolve, reject) => {
          abortSignal?.addEventListener('abort', () => reject(abortSignal.reason), { once: true })
        })
      },
    })
    const deleteAll = tool({ description: 'Deletes everything', inputSchema: z.object({}), execute: async () => 'deleted' })
    const refuseDeleteAll: Middleware = async function refuseDeleteAll(ctx, next) {
      if (ctx.call.name === 'delete_all') {
        await Promise.resolve()
        throw new LoopError('fatal', 'delete_all is never allowed here')
      }
      return next()
    }
    const model = scriptedLanguageModel([
      {
        toolCalls: [
          { name: 'slow', input: {} },
          { name: 'delete_all', input: {} },
        ],
      },
      { text: 'never reached' },
    ])
    const shallot = shallotTools({ slow, delete_all: deleteAll }, { middleware: [refuseDeleteAll] })

    const generation = generateText({
      model,
      prompt: 'clean up',
      tools: shallot.tools,
      abortSignal: shallot.abortSignal,
      stopWhen: stepCountIs(5),
    })

    await expect(generation).rejects.toMatchObject({ kind: 'fatal', message: 'delete_all is never allowed here' })
    expect(siblingSignal?.aborted).toBe(true)
    expect(shallot.abortSignal.aborted).toBe(true)
    expect(model.doGenerateCalls).toHaveLength(1)
  })
})

describe('abort signals flow both ways', () => {
  function hangingTool() {
    const state: { signal?: AbortSignal | undefined; started: Promise<void> } = { started: Promise.resolve() }
    let markStarted = () => {}
    state.started = new Promise<void>((resolve) => {
      markStarted = resolve
    })
    const hang = tool({
      description: 'Runs until aborted',
      inputSchema: z.object({}),
      execute: async (_input, { abortSignal }) => {
        state.signal = abortSignal
        markStarted()
        return new Promise<string>((_resolve, reject) => {
          abortSignal?.addEventListener('abort', () => reject(abortSignal.reason), { once: true })
        })
      },
    })
    return { hang, state }
  }

  it("passes generateText's abortSignal into the dispatch, so the running tool sees it abort", async () => {
    const { hang, state } = hangingTool()
    const controller = new AbortController()
    const shallot = shallotTools({ hang })
    const generation = generateText({
      model: scriptedLanguageModel([{ toolCalls: [{ name: 'hang', input: {} }] }, { text: 'never reached' }]),
      prompt: 'go',
      tools: shallot.tools,
      abortSignal: controller.signal,
      stopWhen: stepCountIs(5),
    })
    await state.started
    const reason = new Error('the user pressed Ctrl-C')
    controller.abort(reason)

    await expect(generation).rejects.toBe(reason)
    expect(state.signal?.aborted).toBe(true)
    expect(shallot.error?.kind).toBe('cancelled')
  })

  it('cancels through the signal option too, and abortSignal carries it to generateText', async () => {
    const { hang, state } = hangingTool()
    const controller = new AbortController()
    const shallot = shallotTools({ hang }, { signal: controller.signal })
    const generation = generateText({
      model: scriptedLanguageModel([{ toolCalls: [{ name: 'hang', input: {} }] }, { text: 'never reached' }]),
      prompt: 'go',
      tools: shallot.tools,
      abortSignal: shallot.abortSignal,
      stopWhen: stepCountIs(5),
    })
    await state.started
    controller.abort(new Error('shutting down'))

    await expect(generation).rejects.toThrow('shutting down')
    expect(state.signal?.aborted).toBe(true)
    expect(shallot.abortSignal.aborted).toBe(true)
  })
})
