import { createAgent, memoryCheckpoints } from '@shallot/agent'
import { createRun, defineTool, type Json, LoopError, OptionsError } from '@shallot/core'
import { manualClock, type ScriptedTurn, type ScriptStep, scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { CONVERGENCE_STATE_KEY, type ConvergenceOptions, resetConvergence, stuckLoop, stuckLoopDefinition } from './index.js'

/** A deployment that never finishes: every status read names a new time and percentage. */
function deployment(answers?: (n: number) => string) {
  let reads = 0
  const status = defineTool({
    name: 'deploy_status',
    description: 'Read the deployment status',
    input: z.object({ service: z.string() }),
    effect: 'read',
    execute: () => {
      reads++
      return answers?.(reads) ?? `deploying since 2026-12-01T10:${10 + reads}:00Z, ${40 + reads}% done, job ${1000 + reads}`
    },
  })
  return {
    status,
    get reads() {
      return reads
    },
  }
}

const poll = (text: string | undefined, service = 'api'): ScriptedTurn =>
  text === undefined
    ? { toolCalls: [{ name: 'deploy_status', args: { service } }] }
    : { text, toolCalls: [{ name: 'deploy_status', args: { service } }] }

function agentWith(steps: ScriptStep[], convergence: ConvergenceOptions, world = deployment()) {
  const agent = createAgent({
    model: scriptedModel(steps, { onEnd: 'repeat' }),
    tools: [world.status],
    middleware: [stuckLoop({ convergence })],
    clock: manualClock(),
    limits: { maxTurns: 12 },
  })
  const events: string[] = []
  agent.stack.on((e) => {
    if (e.type.startsWith('stuck-loop.')) events.push(`${e.type} turn ${e.turn} like ${e.like} x${e.repeats}`)
  })
  return { agent, events, world }
}

describe('convergence in an agent run', () => {
  it('stops a model that keeps polling with the same words, on exactly the third near-identical turn', async () => {
    const { agent, events, world } = agentWith(
      [({ turn }) => poll(`Turn ${turn}: the deployment is still running at ${turn}0%, let me check the status again.`)],
      {},
    )
    const outcome = await agent.run({ input: 'Tell me when the api deployment is done' })
    expect(outcome).toMatchObject({
      status: 'stopped',
      turns: 3,
      error: { kind: 'loop_detected', details: { reason: 'converged', repeats: 3 } },
    })
    expect(world.reads).toBe(3)
    expect(events).toEqual(['stuck-loop.converging turn 2 like 1 x2', 'stuck-loop.converged turn 3 like 2 x3'])
    if (outcome.status !== 'stopped') return
    expect(outcome.error.message).toMatch(/^the model gave 3 near-identical replies in a row \(similarity 1 >= 0\.9\)/)
    expect(outcome.report.text).toContain('near-identical replies')
  })

  it('waits for `after` repeats: with after 5 the run goes on through turn 4 and stops at 5', async () => {
    const { agent } = agentWith([poll('Still deploying, checking again.')], { after: 5 })
    expect(await agent.run({ input: 'wait for the deploy' })).toMatchObject({ status: 'stopped', turns: 5 })
  })

  it('does not stop a model that makes progress: the same words, but new results every turn', async () => {
    const pages = ['alpha beta gamma', 'delta epsilon zeta', 'eta theta iota', 'kappa lambda mu']
    const world = deployment((n) => pages[n - 1] ?? 'no more pages')
    const steps: ScriptStep[] = [({ turn }) => (turn <= 4 ? poll('Reading the next page of the log.') : { text: 'Read the whole log.' })]
    const { agent, events } = agentWith(steps, {}, world)
    expect(await agent.run({ input: 'read the log' })).toMatchObject({ status: 'completed', turns: 5 })
    expect(events).toEqual([])
  })

  it('holds to the similarity threshold: replies that share less than it are not repeats', async () => {
    const replies = [
      'I will check the status of the api service now',
      'Next I should look at the database replica lag instead',
      'Maybe the queue workers are the problem so I inspect them',
      'Finally the cache hit ratio might explain the slowness today',
    ]
    const steps: ScriptStep[] = [({ turn }) => (turn <= 4 ? poll(replies[turn - 1]) : { text: 'done' })]
    const world = deployment(() => 'healthy')
    const strict = agentWith(steps, { similarity: 0.9 }, world)
    expect(await strict.agent.run({ input: 'find the slowness' })).toMatchObject({ status: 'completed' })
    // The same run with a threshold any two turns reach (they share the call and the result) stops.
    const loose = agentWith(
      steps,
      { similarity: 0.05 },
      deployment(() => 'healthy'),
    )
    expect(await loose.agent.run({ input: 'find the slowness' })).toMatchObject({ status: 'stopped', turns: 3 })
  })

  it('catches a model going back and forth between two plans (A, B, A, B) within the window', async () => {
    const steps: ScriptStep[] = [
      ({ turn }) => (turn % 2 === 1 ? poll('Checking the api service first.', 'api') : poll('Now the worker service.', 'worker')),
    ]
    const world = deployment(() => 'deploying')
    const { agent, events } = agentWith(steps, { window: 2 }, world)
    expect(await agent.run({ input: 'deploy both' })).toMatchObject({ status: 'stopped', turns: 4 })
    expect(events).toEqual(['stuck-loop.converging turn 3 like 1 x2', 'stuck-loop.converged turn 4 like 2 x3'])
    const narrow = agentWith(
      steps,
      { window: 1 },
      deployment(() => 'deploying'),
    )
    expect(await narrow.agent.run({ input: 'deploy both' })).toMatchObject({ status: 'stopped', error: { kind: 'budget_exhausted' } })
  })

  it('with action ask, ends the run as user_input_required for a person to redirect it', async () => {
    const { agent } = agentWith([poll('Checking again.')], { action: 'ask' })
    const outcome = await agent.run({ input: 'wait for the deploy' })
    expect(outcome).toMatchObject({ status: 'stopped', turns: 3, error: { kind: 'user_input_required', details: { reason: 'converged' } } })
    expect(outcome.status === 'stopped' && LoopError.is(outcome.error)).toBe(true)
  })

  it('keeps its count across a checkpoint and resume, and resetConvergence forgets it', async () => {
    const checkpoints = memoryCheckpoints()
    const world = deployment(() => 'deploying')
    let calls = 0
    const model = scriptedModel(
      [
        () => {
          calls++
          if (calls === 3) throw new Error('provider down')
          return poll('Checking again.')
        },
      ],
      { onEnd: 'repeat' },
    )
    const agent = createAgent({
      model,
      tools: [world.status],
      middleware: [stuckLoop({ convergence: { after: 4 } })],
      clock: manualClock(),
      checkpoints,
    })
    const first = await agent.run({ input: 'wait', runId: 'r1' })
    expect(first).toMatchObject({ status: 'stopped', turns: 2, error: { kind: 'model_failed' } })
    // Two repeats are in the checkpoint: turns 3 and 4 make four near-identical turns.
    const resumed = await agent.resume('r1')
    expect(resumed).toMatchObject({ status: 'stopped', turns: 4, error: { kind: 'loop_detected' } })
    const saved = await checkpoints.load('r1')
    if (saved === undefined) throw new Error('no checkpoint')
    resetConvergence(saved.state)
    expect(saved.state[CONVERGENCE_STATE_KEY]).toBeUndefined()
  })
})

/** `word` with a zero-width space after its `at`-th letter. */
const hide = (word: string, at: number) => `${word.slice(0, at)}\u200b${word.slice(at)}`

describe('convergence against hostile replies, through an agent', () => {
  it('stops a model whose 1 MB replies differ only in zero-width characters and numbers, on the third turn', async () => {
    const reply = (turn: number) =>
      // The invisible character moves inside the words each turn, so only removing it makes the turns alike.
      `Attempt ${turn} at ${turn}:0${turn}: the ${hide('rollout', turn)} is ${hide('still', turn)} at ${turn * 7}%, ${hide('checking', turn)} again. `.repeat(
        12_000,
      )
    const { agent, world } = agentWith(
      [({ turn }) => poll(reply(turn))],
      {},
      deployment(() => 'deploying'),
    )
    const outcome = await agent.run({ input: 'wait for the rollout' })
    expect(outcome).toMatchObject({ status: 'stopped', turns: 3, error: { kind: 'loop_detected', details: { reason: 'converged' } } })
    expect(world.reads).toBe(3)
  })

  it('treats turns of empty replies with the same call and result as repeats', async () => {
    const { agent } = agentWith(
      [poll(undefined)],
      {},
      deployment(() => 'deploying'),
    )
    expect(await agent.run({ input: 'wait' })).toMatchObject({ status: 'stopped', turns: 3, error: { kind: 'loop_detected' } })
  })
})

describe('convergence against hostile replies', () => {
  /** Runs the watcher directly on turns with the given texts, as the agent would, and returns the turn it stopped at. */
  function stopsAt(texts: readonly string[], options: ConvergenceOptions = {}, results?: readonly string[]): number | undefined {
    const layer = stuckLoop({ convergence: options })
    const run = createRun()
    const env = { log: { warn() {} } as never, emit() {} }
    for (const [i, text] of texts.entries()) {
      const call = { id: `c${i}`, name: 'deploy_status', args: { service: 'api' } }
      const content = results?.[i] ?? 'deploying'
      const result = { callId: call.id, name: call.name, ok: true, content, attempts: 1, durationMs: 0, replayed: false, trace: [] }
      try {
        layer.observeTurn?.({ turn: i + 1, text, calls: [call], results: [result] }, run, env)
      } catch (err) {
        if (LoopError.is(err)) return i + 1
        throw err
      }
    }
    return undefined
  }

  it('counts a similarity equal to the threshold as a repeat, and one just below it as none', () => {
    // With the call, the replies are 'a b c|d deploy status service api': 13 words and pairs each,
    // 10 of them shared, so 10 / 16; their results are the same (1).
    expect(stopsAt(['a b c', 'a b d'], { after: 2, similarity: 10 / 16 })).toBe(2)
    expect(stopsAt(['a b c', 'a b d'], { after: 2, similarity: 0.626 })).toBeUndefined()
  })

  it('is not fooled by zero-width characters, full-width letters, combining marks or bidi controls', () => {
    expect(
      stopsAt(
        [
          'Checking the deployment status again.',
          'Check\u200bing the de\u200dployment sta\u2060tus again.\ufeff',
          'Ｃｈｅｃｋｉｎｇ the ｄｅｐｌｏｙｍｅｎｔ status again.',
          'Che\u0301cking the\u202e deployment\u202c s\u0308tatus again.\u{e0041}',
        ],
        { after: 4 },
      ),
    ).toBe(4)
  })

  it('sees replies that differ only in numbers, times, dates, ids and whitespace as the same', () => {
    expect(
      stopsAt(
        [
          'At 10:42:07 job 8f3a9c2e1b is 45% done (attempt 1).',
          'At   11:02:59 job 0b7d33aa91 is 52% done (attempt 2).',
          'At 2026-12-01T12:00:00Z job 550e8400-e29b-41d4-a716-446655440000 is 61.5% done (attempt 3).',
        ],
        {},
        ['eta 120 s', 'eta 95 s', 'eta 70 s'],
      ),
    ).toBe(3)
  })

  it('treats empty replies with the same calls and results as repeats, and empty replies with new results as progress', () => {
    expect(stopsAt(['', '', ''])).toBe(3)
    expect(stopsAt(['', '', '', ''], {}, ['page one words', 'second page other', 'third lot here', 'fourth batch end'])).toBeUndefined()
  })

  it('compares only the first maxChars of a huge reply, and keeps the run state small', () => {
    const huge = (tail: string) => `${'the deployment is still running and I will keep checking it '.repeat(20_000)}${tail}`
    const run = createRun()
    const layer = stuckLoop({ convergence: { maxChars: 2000 } })
    const env = { log: { warn() {} } as never, emit() {} }
    const call = { id: 'c', name: 'deploy_status', args: { service: 'api' } }
    const result = {
      callId: 'c',
      name: 'deploy_status',
      ok: true,
      content: 'x'.repeat(1_000_000),
      attempts: 1,
      durationMs: 0,
      replayed: false,
      trace: [],
    }
    const observe = (turn: number, tail: string) =>
      layer.observeTurn?.({ turn, text: huge(tail), calls: [call], results: [result] }, run, env)
    observe(1, 'first ending')
    observe(2, 'a completely different ending that is far past the cap')
    expect(() => observe(3, 'yet another')).toThrow(expect.objectContaining({ kind: 'loop_detected' }))
    expect(JSON.stringify(run.state[CONVERGENCE_STATE_KEY] as Json).length).toBeLessThan(20_000)
  })

  it('forgets a corrupt memory in the run state instead of stopping on it', () => {
    const layer = stuckLoop({ convergence: {} })
    const env = { log: { warn() {} } as never, emit() {} }
    for (const corrupt of [
      { streak: 99, turns: 'no' },
      { streak: -1, turns: [] },
      { streak: 5, turns: [{ turn: 1, said: [Number.NaN], heard: [] }] },
      'garbage',
      null,
    ]) {
      const run = createRun({ state: { [CONVERGENCE_STATE_KEY]: corrupt as Json } })
      const call = { id: 'c', name: 'deploy_status', args: { service: 'api' } }
      const result = {
        callId: 'c',
        name: 'deploy_status',
        ok: true,
        content: 'deploying',
        attempts: 1,
        durationMs: 0,
        replayed: false,
        trace: [],
      }
      expect(() => layer.observeTurn?.({ turn: 1, text: 'Checking again.', calls: [call], results: [result] }, run, env)).not.toThrow()
      expect(run.state[CONVERGENCE_STATE_KEY]).toMatchObject({ streak: 0 })
    }
  })
})

describe('convergence options', () => {
  it('refuses bad values, naming the option', () => {
    for (const [convergence, path] of [
      [{ similarity: 0 }, 'convergence.similarity'],
      [{ similarity: 1.5 }, 'convergence.similarity'],
      [{ similarity: Number.NaN }, 'convergence.similarity'],
      [{ after: 1 }, 'convergence.after'],
      [{ after: 2.5 }, 'convergence.after'],
      [{ window: 0 }, 'convergence.window'],
      [{ maxChars: 10 }, 'convergence.maxChars'],
      [{ action: 'panic' }, 'convergence.action'],
      [{ simlarity: 0.9 }, 'convergence'],
    ] as const) {
      expect(() => stuckLoop({ convergence: convergence as never })).toThrow(OptionsError)
      expect(() => stuckLoop({ convergence: convergence as never })).toThrow(new RegExp(`option ${path.replace('.', '\\.')}`))
    }
    expect(() => stuckLoopDefinition.build({ convergence: { similarity: 2 } })).toThrow(/convergence\.similarity/)
    expect(stuckLoopDefinition.build({ convergence: { similarity: 0.8, action: 'ask' } }).observeTurn).toBeTypeOf('function')
    expect(stuckLoop().observeTurn).toBeUndefined()
  })
})
