import { createAgent } from '@shallot/agent'
import { defineTool, LoopError, type Middleware } from '@shallot/core'
import { stuckLoop } from '@shallot/stuck-loop'
import { type FakeProvider, type FakeRequest, type FakeTurn, fakeProvider } from '@shallot/testing'
import { generateText, stepCountIs, streamText, tool } from 'ai'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { aiSdkModel, shallotTools } from './index.js'
import { formats } from './wire-formats.test-helper.js'

// Convergence (stuck-loop's turn hook: a model whose turns bring nothing new is stopped) under the AI SDK's own loop:
// shallotTools' stopOnHardError shows each step with tool calls to the stack's observeTurn, as createAgent does after
// each turn. Shared by
// ai 6 (convergence.test.ts) and ai 7 with its providers (convergence.node22.test.ts).

let provider: FakeProvider | undefined
afterEach(async () => {
  await provider?.close()
  provider = undefined
})

/** A deployment that never finishes: every read names a new time and percentage (numbers are masked, so alike). */
function deployment(answer: (n: number) => string = (n) => `deploying since 10:${10 + n}:00, ${40 + n}% done`) {
  let reads = 0
  return {
    reads: () => reads,
    read: () => answer(++reads),
  }
}

/** Request n: the same words (but the number), and `calls` parallel status reads with ids unique to the request. */
const polling =
  (calls = 1) =>
  (request: FakeRequest): FakeTurn => ({
    text: `Turn ${request.index + 1}: still running at ${request.index + 1}0%, let me check the status again.`,
    toolCalls: Array.from({ length: calls }, (_, i) => ({
      id: `call_${request.index}_${i}`,
      name: 'deploy_status',
      args: { service: 'api' },
    })),
  })

const sdkTools = (world: ReturnType<typeof deployment>) => ({
  deploy_status: tool({
    description: 'Read the deployment status',
    inputSchema: z.object({ service: z.string() }),
    execute: async () => world.read(),
  }),
})

async function rejection(work: Promise<unknown>): Promise<unknown> {
  try {
    await work
  } catch (error) {
    return error
  }
  return undefined
}

describe.each(formats)('convergence under generateText, $name', (format) => {
  it('stops the generation on the third near-identical step, before a fourth request, as createAgent stops its run', async () => {
    provider = await fakeProvider({ script: [polling()], onEnd: 'repeat' })
    const reference = deployment()
    const status = defineTool({
      name: 'deploy_status',
      description: 'Read the deployment status',
      input: z.object({ service: z.string() }),
      effect: 'read',
      execute: () => reference.read(),
    })
    const agent = createAgent({ model: aiSdkModel(format.model(provider)), tools: [status], middleware: [stuckLoop({ convergence: {} })] })
    const outcome = await agent.run({ input: 'Tell me when the api deployment is done' })
    expect(outcome).toMatchObject({ status: 'stopped', turns: 3, error: { kind: 'loop_detected', details: { reason: 'converged' } } })
    await provider.close()

    provider = await fakeProvider({ script: [polling()], onEnd: 'repeat' })
    const world = deployment()
    const shallot = shallotTools(sdkTools(world), { middleware: [stuckLoop({ convergence: {} })], effects: { deploy_status: 'read' } })
    const events: string[] = []
    shallot.stack.on((e) => events.push(`${e.type} turn ${e.turn}`))
    const thrown = await rejection(
      generateText({
        model: format.model(provider),
        prompt: 'Tell me when the api deployment is done',
        tools: shallot.tools,
        abortSignal: shallot.abortSignal,
        stopWhen: [stepCountIs(10), shallot.stopOnHardError],
      }),
    )
    expect(thrown).toMatchObject({ kind: 'loop_detected', details: { reason: 'converged', turn: 3, repeats: 3 } })
    expect(shallot.error).toBe(thrown)
    // The same report as the agent's, but for how to go on: a generation is not resumed by id.
    const report = shallot.report(thrown)
    const agentReport = outcome.status === 'stopped' ? outcome.report : undefined
    expect(report).toMatchObject({ completedTurns: agentReport?.completedTurns, failed: agentReport?.failed, why: agentReport?.why })
    expect(report?.completedCalls).toEqual(agentReport?.completedCalls)
    expect(report?.resume).toBeUndefined()
    expect(report?.nextSteps).toBe(
      agentReport?.nextSteps.replace(`resume it with ${agentReport.resume}`, 'generate again with the conversation so far'),
    )
    expect(world.reads()).toBe(reference.reads())
    expect(provider.requests).toHaveLength(3)
    expect(events.filter((e) => e.startsWith('stuck-loop.'))).toEqual(['stuck-loop.converging turn 2', 'stuck-loop.converged turn 3'])
  })
})

describe('convergence under the AI SDK: hostile cases', () => {
  const [format] = formats
  if (format === undefined) throw new Error('no wire format')

  async function generate(world: ReturnType<typeof deployment>, calls: number, middleware: Middleware[], listen?: () => void) {
    provider = await fakeProvider({ script: [polling(calls)], onEnd: 'repeat' })
    const shallot = shallotTools(sdkTools(world), { middleware, effects: { deploy_status: 'read' } })
    if (listen !== undefined) shallot.stack.on(listen)
    const stopOnHardError = shallot.stopOnHardError
    const thrown = await rejection(
      generateText({
        model: format?.model(provider) as never,
        prompt: 'Tell me when the api deployment is done',
        tools: shallot.tools,
        abortSignal: shallot.abortSignal,
        // Listed twice: a step is shown once.
        stopWhen: [stepCountIs(8), stopOnHardError, stopOnHardError],
      }),
    )
    return { thrown, requests: provider.requests.length }
  }

  it('counts a step of parallel calls once: two reads per step still stop at the third step', async () => {
    const world = deployment()
    const { thrown, requests } = await generate(world, 2, [stuckLoop({ convergence: {} })])
    expect(thrown).toMatchObject({ kind: 'loop_detected', details: { turn: 3 } })
    expect(world.reads()).toBe(6)
    expect(requests).toBe(3)
  })

  it('a listener that throws on every event, and a layer whose turn hook throws, change nothing: the loop is still stopped', async () => {
    const broken: Middleware = (_ctx, next) => next()
    broken.observeTurn = () => {
      throw new Error('a bug in a third-party observer')
    }
    // After stuck-loop: every observer sees the turn, the broken one's throw is logged, and stuck-loop's stop ends the run.
    const { thrown, requests } = await generate(deployment(), 1, [stuckLoop({ convergence: {} }), broken], () => {
      throw new Error('listener bug')
    })
    expect(thrown).toMatchObject({ kind: 'loop_detected', details: { turn: 3 } })
    expect(requests).toBe(3)
  })

  it('lets a model that makes progress go on: new results each step are not a loop', async () => {
    const pages = ['alpha bravo', 'charlie delta', 'echo foxtrot', 'golf hotel', 'india juliet', 'kilo lima', 'mike november', 'oscar papa']
    const world = deployment((n) => `page ${n}: ${pages[n - 1]}`)
    const { thrown, requests } = await generate(world, 1, [stuckLoop({ convergence: {} })])
    expect(thrown).toBeUndefined()
    expect(requests).toBe(8)
  })

  it('without convergence nothing is observed: the generation runs to its step count', async () => {
    const world = deployment()
    const { thrown, requests } = await generate(world, 1, [stuckLoop()])
    expect(thrown).toBeUndefined()
    expect(requests).toBe(8)
  })

  it('streamText: the stream rejects with the LoopError after the third step, not with an abort', async () => {
    provider = await fakeProvider({ script: [polling()], onEnd: 'repeat' })
    const shallot = shallotTools(sdkTools(deployment()), {
      middleware: [stuckLoop({ convergence: {} })],
      effects: { deploy_status: 'read' },
    })
    const result = streamText({
      model: format.model(provider),
      prompt: 'Tell me when the api deployment is done',
      tools: shallot.tools,
      experimental_transform: shallot.streamTransform,
      stopWhen: [stepCountIs(10), shallot.stopOnHardError],
      onError: () => {},
    })
    const types: string[] = []
    const thrown = await rejection(
      (async () => {
        for await (const part of result.fullStream) types.push(part.type)
      })(),
    )
    expect(LoopError.is(thrown) && thrown.kind).toBe('loop_detected')
    expect(shallot.error).toBe(thrown)
    // The stop is decided between steps, after the step's parts went through the transform: no error part, no abort.
    expect(types).not.toContain('abort')
    expect(types.filter((t) => t === 'finish-step')).toHaveLength(3)
    expect(provider.requests).toHaveLength(3)
  })
})
