import { createAgent } from '@shallot/agent'
import { defineTool, ToolError } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { stuckLoop } from './index.js'

function project() {
  const world = { invocations: 0 }
  const readFile = defineTool({
    name: 'read_file',
    description: 'Read a text file',
    input: z.object({ path: z.string() }),
    effect: 'read',
    execute: ({ path }) => {
      world.invocations++
      if (path !== 'src/main.rs') throw new ToolError('not_found', `file ${path} not found`, { hint: 'files: src/main.rs' })
      return 'fn main() {}'
    },
  })
  return { world, readFile }
}

const stubborn = { toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] }

describe('stuckLoop in an agent run', () => {
  it('stops a model that ignores its errors with loop_detected, and the report names the tool', async () => {
    const { world, readFile } = project()
    const agent = createAgent({
      model: scriptedModel([stubborn], { onEnd: 'repeat' }),
      tools: [readFile],
      middleware: [stuckLoop()],
      clock: manualClock(),
    })
    const outcome = await agent.run({ input: 'What does src/main.rs do?' })
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error.kind).toBe('loop_detected')
    expect(outcome.turns).toBe(4)
    expect(outcome.report.failed.details).toMatchObject({ tool: 'read_file', count: 5, lastError: 'not_found: file src/mian.rs not found' })
    expect(outcome.report.text).toContain('read_file was called 5 times with the same arguments')
    expect(outcome.report.text).toContain('tool: read_file')
    expect(world.invocations).toBe(2)
  })

  it('completes the run when the model changes its arguments after the refusal', async () => {
    const { world, readFile } = project()
    // Repeats the mistyped path until it reads a refusal, then fixes it.
    const model = scriptedModel(
      [
        ({ lastResults }) => {
          const last = lastResults[0]
          if (last?.ok) return { text: 'main.rs defines main()' }
          if (last?.content.includes('repeated_failure')) return { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] }
          return stubborn
        },
      ],
      { onEnd: 'repeat' },
    )
    const agent = createAgent({ model, tools: [readFile], middleware: [stuckLoop()], clock: manualClock() })
    const outcome = await agent.run({ input: 'What does src/main.rs do?' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'main.rs defines main()', turns: 5 })
    expect(world.invocations).toBe(3)
  })
})
