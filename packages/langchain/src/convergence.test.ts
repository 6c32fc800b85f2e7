// Convergence (stuck-loop's turn hook, decision 322) under LangChain's own agent loop: shallotMiddleware shows each
// completed turn to the stack's observeTurn before the next model call, as shallot's createAgent does after each turn.
import { ChatAnthropic } from '@langchain/anthropic'
import { createAgent as createShallotAgent } from '@shallot/agent'
import { defineTool, type Middleware, type ModelAdapter, type StackEvent } from '@shallot/core'
import { stuckLoop } from '@shallot/stuck-loop'
import { manualClock } from '@shallot/testing'
import { createAgent, tool } from 'langchain'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type AnthropicServer, anthropicServer, type Block, type Reply } from './anthropic-server.test-helper.js'
import { loopErrorOf, shallotMiddleware } from './index.js'

let server: AnthropicServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const claude = (url: string) => new ChatAnthropic({ model: 'claude-test', apiKey: 'sk-ant-test', anthropicApiUrl: url, maxRetries: 0 })
const ask = { messages: [{ role: 'user', content: 'Tell me when the api deployment is done' }] }

/** A deployment that never finishes: every read names a new time and percentage (numbers are masked, so alike). */
function deployment(answer: (n: number) => string = (n) => `deploying since 10:${10 + n}:00, ${40 + n}% done`) {
  let reads = 0
  const status = tool(async () => answer(++reads), {
    name: 'deploy_status',
    description: 'Read the deployment status',
    schema: z.object({ service: z.string() }),
  })
  return { status, reads: () => reads }
}

/** Turn n: the same words (but the number), and `calls` parallel status reads. */
function pollTurn(n: number, calls = 1): Reply {
  const content: Block[] = [{ type: 'text', text: `Turn ${n}: still running at ${n}0%, let me check the status again.` }]
  for (let i = 0; i < calls; i++)
    content.push({ type: 'tool_use', id: `toolu_${n}_${i}`, name: 'deploy_status', input: { service: 'api' } })
  return { reply: 'message', content }
}
const polls = (count: number, calls = 1) => Array.from({ length: count }, (_, i) => pollTurn(i + 1, calls))
const done: Reply = { reply: 'message', content: [{ type: 'text', text: 'the deployment finished' }] }

async function stoppedWith(invocation: Promise<unknown>) {
  try {
    await invocation
  } catch (error) {
    return loopErrorOf(error)
  }
  return undefined
}

describe('convergence under LangChain createAgent', () => {
  it('stops the run on the third near-identical turn, before the fourth model call, as createAgent does', async () => {
    // createAgent over the same script: the reference outcome.
    const reference = deployment()
    const shallot = createShallotAgent({
      model: scriptedAdapter(),
      tools: [
        defineTool({
          name: 'deploy_status',
          description: 'Read',
          input: z.object({ service: z.string() }),
          effect: 'read',
          execute: () => reference.status.invoke({ service: 'api' }),
        }),
      ],
      middleware: [stuckLoop({ convergence: {} })],
      clock: manualClock(),
    })
    const outcome = await shallot.run({ input: 'Tell me when the api deployment is done' })
    expect(outcome).toMatchObject({ status: 'stopped', turns: 3, error: { kind: 'loop_detected', details: { reason: 'converged' } } })

    server = await anthropicServer([...polls(6), done])
    const world = deployment()
    const events: string[] = []
    const agent = createAgent({
      model: claude(server.url),
      tools: [world.status],
      middleware: [
        shallotMiddleware({
          middleware: [stuckLoop({ convergence: {} })],
          effects: { deploy_status: 'read' },
          onEvent: (e) => events.push(`${e.type} turn ${e.turn}`),
          clock: manualClock(),
        }),
      ],
    })
    const hard = await stoppedWith(agent.invoke(ask))
    expect(hard).toMatchObject({ kind: 'loop_detected', details: { reason: 'converged', turn: 3, repeats: 3 } })
    expect(world.reads()).toBe(reference.reads())
    expect(server.requests).toHaveLength(3)
    expect(events.filter((e) => e.startsWith('stuck-loop.'))).toEqual(['stuck-loop.converging turn 2', 'stuck-loop.converged turn 3'])
  })

  it('counts a turn of parallel calls once: two reads per turn still stop at the third turn', async () => {
    server = await anthropicServer([...polls(6, 2), done])
    const world = deployment()
    const agent = createAgent({
      model: claude(server.url),
      tools: [world.status],
      middleware: [shallotMiddleware({ middleware: [stuckLoop({ convergence: {} })], effects: { deploy_status: 'read' } })],
    })
    const hard = await stoppedWith(agent.invoke(ask))
    expect(hard).toMatchObject({ kind: 'loop_detected', details: { turn: 3, repeats: 3 } })
    expect(world.reads()).toBe(6)
    expect(server.requests).toHaveLength(3)
  })

  it('lets a model that makes progress go on: new results each turn are not a loop', async () => {
    server = await anthropicServer([...polls(4), done])
    const pages = ['alpha bravo', 'charlie delta', 'echo foxtrot', 'golf hotel']
    const world = deployment((n) => `page ${n}: ${pages[n - 1]} ${pages[n - 1]?.split(' ').reverse().join(' ')}`)
    const agent = createAgent({
      model: claude(server.url),
      tools: [world.status],
      middleware: [shallotMiddleware({ middleware: [stuckLoop({ convergence: {} })], effects: { deploy_status: 'read' } })],
    })
    const { messages } = await agent.invoke(ask)
    expect(messages.at(-1)?.text).toBe('the deployment finished')
    expect(world.reads()).toBe(4)
  })

  it('a listener that throws on every event, and a layer whose turn hook throws, change nothing: the loop is still stopped', async () => {
    server = await anthropicServer([...polls(6), done])
    const world = deployment()
    const broken: Middleware = (_ctx, next) => next()
    broken.observeTurn = () => {
      throw new Error('a bug in a third-party observer')
    }
    const logged: string[] = []
    const logger = {
      error: (_o: unknown, message: string) => logged.push(message),
      warn: () => {},
      info: () => {},
      debug: () => {},
      trace: () => {},
      fatal: () => {},
      child: () => logger,
    }
    const agent = createAgent({
      model: claude(server.url),
      tools: [world.status],
      middleware: [
        shallotMiddleware({
          // After stuck-loop: core's compose stops at the first observer that throws, so one listed before it would
          // silence convergence under createAgent and here alike (a core matter, reported with issue 35's step 3).
          middleware: [stuckLoop({ convergence: {} }), broken],
          effects: { deploy_status: 'read' },
          logger: logger as never,
          onEvent: (event: StackEvent) => {
            throw new Error(`listener bug on ${event.type}`)
          },
        }),
      ],
    })
    const hard = await stoppedWith(agent.invoke(ask))
    expect(hard).toMatchObject({ kind: 'loop_detected', details: { turn: 3 } })
    expect(server.requests).toHaveLength(3)
    expect(logged).toContainEqual(expect.stringMatching(/failed while observing a turn; the run goes on$/))
  })

  it('keeps threads apart: two conversations polling at once each stop on their own third turn', async () => {
    server = await anthropicServer([...polls(3), ...polls(3)])
    const world = deployment()
    const middleware = shallotMiddleware({ middleware: [stuckLoop({ convergence: {} })], effects: { deploy_status: 'read' } })
    const agent = createAgent({ model: claude(server.url), tools: [world.status], middleware: [middleware] })
    const [a, b] = await Promise.all([
      stoppedWith(agent.invoke(ask, { configurable: { thread_id: 'a' } })),
      stoppedWith(agent.invoke(ask, { configurable: { thread_id: 'b' } })),
    ])
    expect(a).toMatchObject({ kind: 'loop_detected', details: { turn: 3 } })
    expect(b).toMatchObject({ kind: 'loop_detected', details: { turn: 3 } })
    expect(server.requests).toHaveLength(6)
  })
})

/** The same polling script as a shallot model adapter: createAgent's own loop, for the reference outcome. */
function scriptedAdapter(): ModelAdapter {
  let turn = 0
  return {
    async generate() {
      turn++
      return {
        text: `Turn ${turn}: still running at ${turn}0%, let me check the status again.`,
        toolCalls: [{ id: `call_${turn}`, name: 'deploy_status', args: { service: 'api' } }],
      }
    },
  }
}
