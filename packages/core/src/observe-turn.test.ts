import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  type CompletedTurn,
  compose,
  createAgent,
  defineTool,
  type Logger,
  LoopError,
  type Middleware,
  type ModelAdapter,
  type ModelResponse,
  type StackEvent,
} from './index.js'

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a word up',
  input: z.object({ word: z.string() }),
  effect: 'read',
  execute: ({ word }) => `${word}: a word`,
})

function model(steps: ModelResponse[]): ModelAdapter {
  let i = 0
  return { name: 'script', generate: async () => steps[Math.min(i++, steps.length - 1)] as ModelResponse }
}

const ask = (word: string): ModelResponse => ({
  text: `looking up ${word}`,
  toolCalls: [{ id: `c-${word}`, name: 'lookup', args: { word } }],
})

function watcher(onTurn: (turn: CompletedTurn) => void): Middleware {
  const layer: Middleware = async (_ctx, next) => next()
  layer.observeTurn = (turn, _run, env) => {
    env.emit('watcher.seen', { calls: turn.calls.length })
    onTurn(turn)
  }
  return layer
}

describe('observeTurn', () => {
  it('shows each completed turn with its text, calls and results, in order, also through compose', async () => {
    const seen: string[] = []
    const layer = compose([watcher((t) => seen.push(`${t.turn} ${t.text} ${t.calls[0]?.name} ${t.results[0]?.content}`))])
    const agent = createAgent({ model: model([ask('onion'), ask('leek'), { text: 'done' }]), tools: [lookup], middleware: [layer] })
    const events: StackEvent[] = []
    agent.stack.on((e) => events.push(e))
    expect(await agent.run({ input: 'define words' })).toMatchObject({ status: 'completed', output: 'done' })
    expect(seen).toEqual(['1 looking up onion lookup onion: a word', '2 looking up leek lookup leek: a word'])
    expect(events.filter((e) => e.type === 'watcher.seen').map((e) => [e.turn, e.calls, e.callId])).toEqual([
      [1, 1, ''],
      [2, 1, ''],
    ])
  })

  it('ends the run with the LoopError a layer throws, the turn kept in the transcript', async () => {
    const stop = watcher((t) => {
      if (t.turn === 2) throw new LoopError('loop_detected', 'the model is going in circles', { details: { failure: 'circles' } })
    })
    const agent = createAgent({ model: model([ask('onion')]), tools: [lookup], middleware: [stop] })
    const outcome = await agent.run({ input: 'define words' })
    expect(outcome).toMatchObject({
      status: 'stopped',
      turns: 2,
      error: { kind: 'loop_detected', message: 'the model is going in circles' },
    })
    if (outcome.status === 'stopped') expect(outcome.report.text).toContain('circles')
  })

  it('logs any other throw and lets the run go on', async () => {
    const logged: unknown[] = []
    const logger = {
      level: 'info',
      child: () => logger,
      info: () => {},
      debug: () => {},
      trace: () => {},
      warn: () => {},
      error: (o: unknown) => logged.push(o),
      fatal: () => {},
    } as unknown as Logger
    const broken = watcher(() => {
      throw new TypeError('observer bug')
    })
    const agent = createAgent({ model: model([ask('onion'), { text: 'done' }]), tools: [lookup], middleware: [broken], logger })
    expect(await agent.run({ input: 'define words' })).toMatchObject({ status: 'completed', output: 'done' })
    expect(logged).toEqual([expect.objectContaining({ err: expect.any(TypeError), turn: 1 })])
  })
})
