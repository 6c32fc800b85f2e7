import {
  type CompletedTurn,
  compose,
  defineTool,
  type Logger,
  LoopError,
  type Middleware,
  type ModelAdapter,
  type ModelResponse,
  type StackEvent,
} from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent } from './index.js'

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

  it('shows the turn to every layer when one throws by mistake, so a stopping layer behind it still stops the run', async () => {
    const logged: unknown[] = []
    const logger = { level: 'info', child: () => logger, error: (o: unknown) => logged.push(o) } as unknown as Logger
    for (const noop of ['info', 'debug', 'trace', 'warn', 'fatal']) (logger as unknown as Record<string, unknown>)[noop] = () => {}
    const seen: number[] = []
    const broken = watcher(() => {
      throw new TypeError('observer bug')
    })
    const stop = watcher((t) => {
      seen.push(t.turn)
      if (t.turn === 2) throw new LoopError('loop_detected', 'the model is going in circles')
    })
    const also = watcher((t) => seen.push(-t.turn))
    const agent = createAgent({ model: model([ask('onion')]), tools: [lookup], middleware: [compose([broken, stop, also])], logger })
    expect(await agent.run({ input: 'define words' })).toMatchObject({ status: 'stopped', turns: 2, error: { kind: 'loop_detected' } })
    // The layer after the one that stopped the run saw the turn too; the broken one was logged each turn, by name.
    expect(seen).toEqual([1, -1, 2, -2])
    expect(logged).toHaveLength(2)
    expect(logged[0]).toMatchObject({ err: expect.any(TypeError), turn: 1 })
  })
})

describe('describeTool', () => {
  it('lists a tool without the note of a layer whose describeTool throws, keeps the other notes, and logs it', async () => {
    const logged: unknown[] = []
    const logger = { level: 'info', child: () => logger, error: (o: unknown) => logged.push(o) } as unknown as Logger
    for (const noop of ['info', 'debug', 'trace', 'warn', 'fatal']) (logger as unknown as Record<string, unknown>)[noop] = () => {}
    const broken: Middleware = async (_ctx, next) => next()
    broken.describeTool = () => {
      throw new TypeError('describer bug')
    }
    const noting: Middleware = async (_ctx, next) => next()
    noting.describeTool = (tool) => `(${tool.name} is slow today)`
    const asked: string[] = []
    const agent = createAgent({
      model: {
        name: 'm',
        generate: async (request) => {
          asked.push(request.tools[0]?.description ?? '')
          return { text: 'done' }
        },
      },
      tools: [lookup],
      middleware: [broken, noting],
      logger,
    })
    expect(await agent.run({ input: 'define words' })).toMatchObject({ status: 'completed', output: 'done' })
    expect(asked).toEqual(['(lookup is slow today) Look a word up'])
    expect(logged).toEqual([expect.objectContaining({ err: expect.any(TypeError), tool: 'lookup' })])
  })

  it("throws a describer's failure out of a bare compose, where there is no logger to tell", () => {
    const broken: Middleware = async (_ctx, next) => next()
    broken.describeTool = () => {
      throw new TypeError('describer bug')
    }
    const both = compose([broken, watcher(() => {})])
    expect(() => both.describeTool?.(lookup, {} as never, 0)).toThrow('describer bug')
  })
})
