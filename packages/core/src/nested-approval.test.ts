// A layer may make a call of its own inside a turn's call (a fallback tool, say), and that call may
// stop for a person. The run must be resumable with the answer to exactly that call.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  createAgent,
  defineTool,
  LoopError,
  type Middleware,
  type ModelAdapter,
  memoryCheckpoints,
  type RunOutcome,
  type Stack,
  type ToolCall,
} from './index.js'
import { approvalBinding, approvalFor } from './kit.js'

const status: ToolCall = { id: 'c1', name: 'status_page', args: { region: 'eu' } }

/** Asks for the status page once; then answers with what it read. */
function statusModel(): ModelAdapter {
  return {
    async generate(request) {
      const results = request.messages.filter((m) => m.role === 'tool').map((m) => (m as { content: string }).content)
      return results.length > 0 ? { text: `read: ${results.join(' | ')}` } : { toolCalls: [status] }
    },
  }
}

/** Stops a call to `mirror` until the run state holds an approval bound to it; its pending entry names it as the policy does. */
const gate: Middleware = async (ctx, next) => {
  const stored = approvalFor(ctx.run, ctx.call)
  if (ctx.call.name === 'status_mirror' && !(stored !== undefined && 'answer' in stored && stored.answer === 'approve')) {
    const entry = {
      callId: ctx.call.id,
      tool: ctx.call.name,
      reason: 'the mirror needs a person',
      digest: approvalBinding(ctx.call, 0).digest,
    }
    throw new LoopError('user_input_required', 'the mirror needs a person', { details: { pending: [entry] } })
  }
  await next()
}

function setup(mirrorArgs: (args: unknown) => unknown = (args) => args) {
  const read: string[] = []
  const statusPage = defineTool({
    name: 'status_page',
    description: 'The status page.',
    input: z.object({ region: z.string() }),
    effect: 'read',
    execute: () => {
      throw new Error('status page down')
    },
  })
  const mirror = defineTool({
    name: 'status_mirror',
    description: 'A mirror of the status page.',
    input: z.object({ region: z.string() }),
    effect: 'read',
    execute: ({ region }) => {
      read.push(region)
      return `mirror says ${region} is up`
    },
  })
  let stack: Stack | undefined
  // A layer that answers a failed status_page call with a call of its own, under an id derived from the turn's call.
  const viaMirror: Middleware = async (ctx, next) => {
    if (ctx.call.name !== 'status_page') return next()
    try {
      await next()
    } catch {
      const result = await (stack as Stack).dispatch(
        { id: `${ctx.call.id}/mirror`, name: 'status_mirror', args: mirrorArgs(ctx.call.args) },
        { run: ctx.run, signal: ctx.signal },
      )
      ctx.result = { value: result.value }
    }
  }
  const checkpoints = memoryCheckpoints()
  const agent = createAgent({ model: statusModel(), tools: [statusPage, mirror], checkpoints, middleware: [viaMirror, gate] })
  stack = agent.stack
  return { agent, checkpoints, read }
}

const stopped = (outcome: RunOutcome) => {
  if (outcome.status !== 'stopped') throw new Error(`expected a stopped run, got ${outcome.status}`)
  return outcome
}

describe("a call made inside a turn's call that stops for a person", () => {
  it('is named pending under its own id, and resuming with exactly that answer runs it once', async () => {
    const { agent, checkpoints, read } = setup()
    const outcome = stopped(await agent.run({ input: 'is eu up?', runId: 'r1' }))
    expect(outcome.report.pending.map((p) => p.callId)).toEqual(['c1/mirror'])
    expect((await checkpoints.load('r1'))?.pendingTurn?.pending).toEqual([
      expect.objectContaining({ callId: 'c1/mirror', turnCallId: 'c1' }),
    ])
    const done = await agent.resume('r1', { approvals: { 'c1/mirror': 'approve' } })
    expect(done).toMatchObject({ status: 'completed', output: 'read: mirror says eu is up' })
    expect(read).toEqual(['eu'])
  })

  it('the answer binds to the inner call: other arguments on the replay are asked about again', async () => {
    let region = 'eu'
    const { agent, read } = setup(() => ({ region }))
    stopped(await agent.run({ input: 'is eu up?', runId: 'r1' }))
    region = 'us'
    const again = stopped(await agent.resume('r1', { approvals: { 'c1/mirror': 'approve' } }))
    expect(again.report.pending.map((p) => p.callId)).toEqual(['c1/mirror'])
    expect(read).toEqual([])
  })
})
