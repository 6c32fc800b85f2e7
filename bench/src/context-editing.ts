import { createAgent } from '@shallot/agent'
import { contextEditing } from '@shallot/context-editing'
import type { LayerEntry, ModelAdapter, ModelMiddleware } from '@shallot/core'
import { readTool } from './fixtures.js'
import type { Case } from './measure.js'

/** Tool turns per run: a run asks the model TURNS + 1 times, over a transcript growing to 2·TURNS + 1 messages. */
export const CONTEXT_TURNS = 10
export const CONTEXT_BARE = `model onion, ${CONTEXT_TURNS} tool turns + answer: one pass-through layer`
export const CONTEXT_BUDGET = `… + contextEditing({ maxInputTokens }), nothing trimmed`
export const CONTEXT_REACTIVE = `… + contextEditing(), no budget (edits only on context_exceeded)`

/** Asks for one lookup per turn, each with fresh arguments, then answers. */
function lookupModel(): ModelAdapter {
  let serial = 0
  return {
    generate: async ({ messages }) =>
      messages.length >= 1 + 2 * CONTEXT_TURNS
        ? { text: 'done' }
        : { toolCalls: [{ id: `t${serial}`, name: 'lookup', args: { id: serial++ } }] },
  }
}

const passThrough: ModelMiddleware = async function passThrough(_ctx, next) {
  await next()
}

/**
 * 9 (continued): the cost of contextEditing() on a model call when nothing is trimmed, against the
 * bare model onion: agent runs of 11 model calls with no tool layers, so the layer's share is visible.
 * Per model call: (a row − the bare row) ÷ 11.
 */
export function contextEditingCases(): Case[] {
  const rows: Array<[string, LayerEntry<ModelMiddleware>[]]> = [
    [CONTEXT_BARE, [passThrough]],
    [CONTEXT_BUDGET, [contextEditing({ maxInputTokens: 1_000_000 }), passThrough]],
    [CONTEXT_REACTIVE, [contextEditing(), passThrough]],
  ]
  return rows.map(([name, modelMiddleware]) => {
    const agent = createAgent({ model: lookupModel(), tools: [readTool], modelMiddleware })
    return {
      name,
      fn: () =>
        agent.run({ input: 'look it up' }).then((outcome) => {
          if (outcome.status !== 'completed' || outcome.turns !== CONTEXT_TURNS + 1) throw new Error(`${name}: the run did not complete`)
        }),
    }
  })
}
