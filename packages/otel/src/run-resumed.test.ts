import { createAgent, memoryCheckpoints } from '@shallot/agent'
import { defineTool, LoopError, type Middleware } from '@shallot/core'
import { afterEach, expect, it } from 'vitest'
import { z } from 'zod'
import { otelSdk } from '../test/world.js'
import { otel } from './index.js'

let sdk: ReturnType<typeof otelSdk> | undefined
afterEach(async () => {
  await sdk?.close()
  sdk = undefined
})

const deploy = defineTool({ name: 'deploy', description: 'Deploy', input: z.object({}), effect: 'write', execute: () => 'deployed' })

/** Stops every deploy for a person: the run stops on its first turn, checkpointed at turn 0. */
const needsPerson: Middleware = async (ctx, next) => {
  if (ctx.call.name === 'deploy') {
    throw new LoopError('user_input_required', 'a deploy needs a person', {
      details: { pending: [{ callId: ctx.call.id, tool: 'deploy', reason: 'deploys need a person' }] },
    })
  }
  await next()
}

it('marks the run span of a resume from a first-turn checkpoint shallot.run.resumed = true, a new run false', async () => {
  sdk = otelSdk()
  const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
  const agent = createAgent({
    model: { generate: async () => ({ toolCalls: [{ id: 'd1', name: 'deploy', args: {} }] }) },
    tools: [deploy],
    middleware: [tracing, needsPerson],
    checkpoints: memoryCheckpoints(),
    onEvent: tracing.onAgentEvent,
  })
  tracing.attach(agent.stack)
  expect(await agent.run({ input: 'deploy', runId: 'r1' })).toMatchObject({ status: 'stopped', error: { kind: 'user_input_required' } })
  expect(await agent.resume('r1')).toMatchObject({ status: 'stopped', error: { kind: 'user_input_required' } })
  const runs = sdk.spans().filter((s) => s.name.startsWith('invoke_agent'))
  expect(runs.map((s) => [s.attributes['shallot.run.id'], s.attributes['shallot.run.resumed']])).toEqual([
    ['r1', false],
    ['r1', true],
  ])
})
