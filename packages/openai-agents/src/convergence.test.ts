// Convergence (stuck-loop's turn hook, decision 322) under the OpenAI Agents SDK's own run loop: the set's
// callModelInputFilter shows each completed turn to the stack's observeTurn before the next model call (decision 525).
import { Agent, run, setTracingDisabled } from '@openai/agents'
import { createAgent } from '@shallot/agent'
import { defineTool, type Middleware, type ModelAdapter } from '@shallot/core'
import { stuckLoop } from '@shallot/stuck-loop'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopErrorOf, shallotFunctionTools } from './index.js'
import { type Reply, scriptedModel } from './testing.js'

setTracingDisabled(true)

/** A deployment that never finishes: every read names a new time and percentage (numbers are masked, so alike). */
function deployment(answer: (n: number) => string = (n) => `deploying since 10:${10 + n}:00, ${40 + n}% done`) {
  let reads = 0
  const spec = {
    name: 'deploy_status',
    description: 'Read the deployment status',
    parameters: z.object({ service: z.string() }),
    effect: 'read' as const,
    execute: async () => answer(++reads),
  }
  return { spec, reads: () => reads }
}

let turn = 0
const polling = (calls = 1) => {
  turn = 0
  return (): Reply => {
    turn++
    return {
      text: `Turn ${turn}: still running at ${turn}0%, let me check the status again.`,
      calls: Array.from({ length: calls }, () => ({ name: 'deploy_status', args: { service: 'api' } })),
    }
  }
}

async function stopped(work: Promise<unknown>) {
  try {
    await work
  } catch (error) {
    return loopErrorOf(error) ?? error
  }
  return undefined
}

async function agentRun(world: ReturnType<typeof deployment>, calls: number, middleware: Middleware[], listen?: () => void) {
  const model = scriptedModel([polling(calls)])
  const shallot = shallotFunctionTools([world.spec], { middleware })
  if (listen !== undefined) shallot.stack.on(listen)
  const agent = new Agent({ name: 'ops', instructions: 'Watch the deployment.', model, tools: shallot.tools })
  const error = await stopped(
    run(agent, 'Tell me when the api deployment is done', {
      signal: shallot.signal,
      callModelInputFilter: shallot.callModelInputFilter,
      maxTurns: 8,
    }),
  )
  return { error, requests: model.requests.length, shallot }
}

describe('convergence under the OpenAI Agents SDK run loop', () => {
  it('stops the run on the third near-identical turn, before a fourth model call, as createAgent does', async () => {
    const reference = deployment()
    const next = polling()
    const adapter: ModelAdapter = {
      async generate() {
        const reply = next()
        return { text: reply.text ?? '', toolCalls: [{ id: `c${turn}`, name: 'deploy_status', args: { service: 'api' } }] }
      },
    }
    const outcome = await createAgent({
      model: adapter,
      tools: [defineTool({ ...reference.spec, input: reference.spec.parameters, execute: reference.spec.execute })],
      middleware: [stuckLoop({ convergence: {} })],
    }).run({ input: 'Tell me when the api deployment is done' })
    expect(outcome).toMatchObject({ status: 'stopped', turns: 3, error: { kind: 'loop_detected' } })

    const world = deployment()
    const { error, requests, shallot } = await agentRun(world, 1, [stuckLoop({ convergence: {} })])
    expect(error).toMatchObject({ kind: 'loop_detected', details: { reason: 'converged', turn: 3, repeats: 3 } })
    expect(shallot.error).toBe(error)
    expect(shallot.signal.aborted).toBe(true)
    expect(world.reads()).toBe(reference.reads())
    expect(requests).toBe(3)
  })

  it('counts a turn of parallel calls once: two reads per turn still stop at the third turn', async () => {
    const world = deployment()
    const { error, requests } = await agentRun(world, 2, [stuckLoop({ convergence: {} })])
    expect(error).toMatchObject({ kind: 'loop_detected', details: { turn: 3 } })
    expect(world.reads()).toBe(6)
    expect(requests).toBe(3)
  })

  it('a listener that throws on every event, and a layer whose turn hook throws, change nothing: the loop is still stopped', async () => {
    const broken: Middleware = (_ctx, next) => next()
    broken.observeTurn = () => {
      throw new Error('a bug in a third-party observer')
    }
    // After stuck-loop: core's compose stops at the first observer that throws (decision 525, "Left").
    const { error, requests } = await agentRun(deployment(), 1, [stuckLoop({ convergence: {} }), broken], () => {
      throw new Error('listener bug')
    })
    expect(error).toMatchObject({ kind: 'loop_detected', details: { turn: 3 } })
    expect(requests).toBe(3)
  })

  it('lets a model that makes progress go on: new results each turn are not a loop', async () => {
    const pages = ['alpha bravo', 'charlie delta', 'echo foxtrot', 'golf hotel', 'india juliet', 'kilo lima', 'mike november', 'oscar papa']
    const world = deployment((n) => `page ${n}: ${pages[n - 1]}`)
    const { error, requests } = await agentRun(world, 1, [stuckLoop({ convergence: {} })])
    // The SDK's own turn limit ends it, not shallot.
    expect(loopErrorOf(error)).toBeUndefined()
    expect(String(error)).toMatch(/max turns/i)
    expect(requests).toBe(8)
  })
})
