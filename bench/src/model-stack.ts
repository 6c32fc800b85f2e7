import { createAgent as coreAgent } from '@shallot/agent'
import type { ModelAdapter } from '@shallot/core'
import { defaultModelMiddleware } from 'shallot'
import { readTool } from './fixtures.js'
import type { Case } from './measure.js'

/** Tool turns per run: a run asks the model MODEL_TURNS + 1 times. */
export const MODEL_TURNS = 10
export const MODEL_CORE = `model calls, ${MODEL_TURNS} tool turns + answer: @shallot/core's createAgent, no model layers`
export const MODEL_DEFAULT = `… shallot's createAgent: defaultModelMiddleware() (circuit breaker, retry, error classifier, timeout)`

/** Asks for one lookup per turn, each with fresh arguments, then answers. */
function lookupModel(): ModelAdapter {
  let serial = 0
  return {
    name: 'bench-model',
    generate: async ({ messages }) =>
      messages.length >= 1 + 2 * MODEL_TURNS
        ? { text: 'done' }
        : { toolCalls: [{ id: `t${serial}`, name: 'lookup', args: { id: serial++ } }] },
  }
}

/**
 * 9 (continued): what the default model stack costs a model call (issue 35's bar: ≤ 1 µs), against core's
 * own path, both with no tool layers so the model side is what differs. Per model call: (default − core) ÷ 11.
 */
export function modelStackCases(): Case[] {
  const rows: Array<[string, () => { run(o: { input: string }): Promise<{ status: string; turns: number }> }]> = [
    [MODEL_CORE, () => coreAgent({ model: lookupModel(), tools: [readTool] })],
    [MODEL_DEFAULT, () => coreAgent({ model: lookupModel(), tools: [readTool], modelMiddleware: defaultModelMiddleware() })],
  ]
  return rows.map(([name, make]) => {
    const agent = make()
    return {
      name,
      fn: () =>
        agent.run({ input: 'look it up' }).then((outcome) => {
          if (outcome.status !== 'completed' || outcome.turns !== MODEL_TURNS + 1) throw new Error(`${name}: the run did not complete`)
        }),
    }
  })
}
