import {
  type Clock,
  defineTool,
  type Logger,
  LoopError,
  type Middleware,
  type ModelAdapter,
  type ModelResponse,
  ToolError,
} from '@shallot/core'
// `resumed` on run.started (and the `run started` line) says whether the run continues from a
// checkpoint: true for every resume, whatever turn the checkpoint was taken on, false for a new run.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type AgentEvent, createAgent, memoryCheckpoints } from './index.js'

const EPOCH = 1_800_000_000_000

function virtualTime(): Clock & { wallNow: () => number; advance(ms: number): void } {
  let now = 0
  return {
    now: () => now,
    wallNow: () => EPOCH + now,
    advance(ms) {
      now += ms
    },
    async sleep(ms, signal) {
      if (signal?.aborted) throw signal.reason
      now += ms
    },
    timer: () => () => {},
  }
}

/** Asks for `call` first, then answers with what the tools said. */
function oneCallModel(call: { name: string; args: Record<string, unknown> }): ModelAdapter {
  return {
    async generate(request): Promise<ModelResponse> {
      const results = request.messages.filter((m) => m.role === 'tool')
      if (results.length > 0) return { text: results.map((m) => (m as { content: string }).content).join(' | ') }
      return { toolCalls: [{ id: 'c1', ...call }] }
    },
  }
}

/** Records the `resumed` field of every run.started event and every `run started` line. */
function watch() {
  const said: Array<[string, unknown]> = []
  const logger = {
    level: 'info',
    debug() {},
    trace() {},
    warn() {},
    error() {},
    fatal() {},
    info(fields: unknown, msg?: string) {
      if (msg === 'run started') said.push(['line', (fields as { resumed?: unknown }).resumed])
    },
    child: () => logger,
  } as unknown as Logger
  const onEvent = (e: AgentEvent) => {
    if (e.type === 'run.started') said.push(['event', e.resumed])
  }
  return { said, logger, onEvent }
}

let searches = 0
const search = defineTool({
  name: 'search',
  description: 'Search',
  input: z.object({ q: z.string() }),
  effect: 'read',
  execute: ({ q }) => {
    // Rate limited for a minute the first time: a parking agent parks its first turn.
    if (searches++ === 0)
      throw new ToolError('rate_limited', 'slow down', { category: 'transient', safeToRepeat: true, retryAfterMs: 60_000 })
    return `found ${q}`
  },
})
const deploy = defineTool({
  name: 'deploy',
  description: 'Deploy',
  input: z.object({}),
  effect: 'write',
  execute: () => 'deployed',
})
/** Stops every deploy for a person: the run stops on its first turn, its calls checkpointed as a pending turn. */
const needsPerson: Middleware = async (ctx, next) => {
  if (ctx.call.name === 'deploy') {
    throw new LoopError('user_input_required', 'a deploy needs a person', {
      details: { pending: [{ callId: ctx.call.id, tool: 'deploy', reason: 'deploys need a person' }] },
    })
  }
  await next()
}

describe('run.started resumed', () => {
  it('is true for a run woken from a checkpoint its first turn parked', async () => {
    searches = 0
    const time = virtualTime()
    const { said, logger, onEvent } = watch()
    const agent = createAgent({
      model: oneCallModel({ name: 'search', args: { q: 'flights' } }),
      tools: [search],
      checkpoints: memoryCheckpoints(),
      clock: time,
      logger,
      onEvent,
      park: { afterMs: 10_000, wallNow: time.wallNow },
    })
    expect(await agent.run({ input: 'find flights', runId: 'p1' })).toMatchObject({ status: 'parked' })
    time.advance(60_000)
    expect(await agent.resume('p1')).toMatchObject({ status: 'completed', output: 'found flights' })
    expect(said).toEqual([
      ['line', false],
      ['event', false],
      ['line', true],
      ['event', true],
    ])
  })

  it('is true for a run resumed from a checkpoint its first turn stopped for a person', async () => {
    const { said, logger, onEvent } = watch()
    const agent = createAgent({
      model: oneCallModel({ name: 'deploy', args: {} }),
      tools: [deploy],
      middleware: [needsPerson],
      checkpoints: memoryCheckpoints(),
      logger,
      onEvent,
    })
    expect(await agent.run({ input: 'deploy', runId: 'a1' })).toMatchObject({ status: 'stopped', error: { kind: 'user_input_required' } })
    // Resumed without an answer, the stopped turn stops again: what matters is how the run starts.
    expect(await agent.resume('a1')).toMatchObject({ status: 'stopped', error: { kind: 'user_input_required' } })
    expect(said).toEqual([
      ['line', false],
      ['event', false],
      ['line', true],
      ['event', true],
    ])
  })

  it('is true for a run resumed from its first checkpoint, before any turn completed (a stop, or a process that died)', async () => {
    const { said, logger, onEvent } = watch()
    const checkpoints = memoryCheckpoints()
    const fails: ModelAdapter = {
      async generate() {
        throw new ToolError('permission_denied', 'no access to this model', { category: 'fatal' })
      },
    }
    const agent = createAgent({ model: fails, tools: [search], checkpoints, logger, onEvent })
    expect(await agent.run({ input: 'x', runId: 'm1' })).toMatchObject({ status: 'stopped' })
    expect(await checkpoints.load('m1')).toMatchObject({ turn: 0 })
    await agent.resume('m1')
    await checkpoints.save({
      version: 1,
      runId: 'died',
      input: 'x',
      status: 'running',
      turn: 0,
      stepsUsed: 0,
      state: {},
      transcript: [{ role: 'user', content: 'x' }],
      turns: [],
    })
    await agent.resume('died')
    expect(said.filter(([what]) => what === 'event').map(([, resumed]) => resumed)).toEqual([false, true, true])
    expect(said.filter(([what]) => what === 'line').map(([, resumed]) => resumed)).toEqual([false, true, true])
  })

  it('is false for every new run, a named one on a checkpoint store included, and for parallel runs', async () => {
    const { said, logger, onEvent } = watch()
    const agent = createAgent({
      model: oneCallModel({ name: 'deploy', args: {} }),
      tools: [deploy],
      checkpoints: memoryCheckpoints(),
      logger,
      onEvent,
    })
    await Promise.all([agent.run({ input: 'a', runId: 'n1' }), agent.run({ input: 'b' }), agent.run({ input: 'c', runId: 'n3' })])
    expect(said.map(([, resumed]) => resumed)).toEqual([false, false, false, false, false, false])
  })
})
