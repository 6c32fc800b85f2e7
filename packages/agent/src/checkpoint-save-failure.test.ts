import { type Clock, defineTool, LoopError, type ModelAdapter, type ModelRequest, type ModelResponse, ToolError } from '@shallot/core'
// A checkpoint save that fails mid-run (a store restarting, a network blip) is not the run's
// outcome: run()/resume() reject with LoopError('fatal') naming the store, nothing is written over
// the last good checkpoint, and a resume once the store is back continues from it.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type CheckpointStore, createAgent, memoryCheckpoints, type RunSnapshot } from './index.js'

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

/** Answers from the transcript alone, as a real model does: asked again with the same messages, it asks for the same calls. */
function searchingModel(): ModelAdapter & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = []
  return {
    requests,
    async generate(request): Promise<ModelResponse> {
      requests.push(request)
      const results = request.messages.filter((m) => m.role === 'tool').map((m) => (m as { content: string }).content)
      if (results.length > 0) return { text: results.join(' | ') }
      return {
        toolCalls: [
          { id: 'a', name: 'search', args: { q: 'hotels' } },
          { id: 'b', name: 'search', args: { q: 'flights' } },
        ],
      }
    },
  }
}

/** `search` for "flights" is rate limited for a minute the first `waits` times; "hotels" always answers. */
function searchTool(waits: number) {
  const calls: string[] = []
  const search = defineTool({
    name: 'search',
    description: 'Search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: ({ q }) => {
      calls.push(q)
      if (q === 'flights' && calls.filter((c) => c === q).length <= waits) {
        throw new ToolError('rate_limited', 'slow down', { category: 'transient', safeToRepeat: true, retryAfterMs: 60_000 })
      }
      return `found ${q}`
    },
  })
  return { search, calls }
}

/** A store whose saves fail while `down` says so, with a transient store error, as a restarting server's would. */
function blinkingStore(): CheckpointStore & { down: (save: RunSnapshot) => boolean; saved: RunSnapshot['status'][] } {
  const inner = memoryCheckpoints()
  const store = {
    name: 'orders-db',
    saved: [] as RunSnapshot['status'][],
    down: (_save: RunSnapshot) => false,
    save(snapshot: RunSnapshot) {
      if (store.down(snapshot)) throw new ToolError('store_unavailable', 'connection refused', { category: 'transient' })
      store.saved.push(snapshot.status)
      return inner.save(snapshot)
    },
    load: (runId: string) => inner.load(runId),
  }
  return store
}

describe('a checkpoint save that fails mid-run', () => {
  it('rejects instead of stopping when the parked checkpoint cannot be saved; resumed once the store is back, the run parks and completes', async () => {
    const time = virtualTime()
    const store = blinkingStore()
    const { search, calls } = searchTool(2)
    const model = searchingModel()
    const agent = createAgent({ model, tools: [search], checkpoints: store, clock: time, park: { afterMs: 10_000, wallNow: time.wallNow } })
    store.down = (snapshot) => snapshot.status === 'parked'

    const run = agent.run({ input: 'plan a trip', runId: 'trip' })
    await expect(run).rejects.toSatisfy(LoopError.is)
    await expect(run).rejects.toMatchObject({
      kind: 'fatal',
      message: 'checkpoints store "orders-db" failed to save the parked checkpoint of run "trip": connection refused',
      details: { runId: 'trip', store: 'orders-db', checkpoint: 'the parked checkpoint' },
    })
    // Nothing was written over the last good checkpoint: no `stopped` that would end the run for good.
    expect(store.saved).toEqual(['running'])
    expect(await store.load('trip')).toMatchObject({ status: 'running', turn: 0 })

    store.down = () => false
    expect(await agent.resume('trip')).toMatchObject({ status: 'parked', wakeAt: EPOCH + 60_000 })
    time.advance(60_000)
    expect(await agent.resume('trip')).toMatchObject({ status: 'completed', output: 'found hotels | found flights' })
    expect(store.saved).toEqual(['running', 'parked', 'running', 'completed'])
    // The turn the failed save lost was asked for again (nothing of it was durable); the parked one was not.
    expect(model.requests).toHaveLength(3)
    expect(calls).toEqual(['hotels', 'flights', 'hotels', 'flights', 'flights'])
  })

  it('rejects when a completed turn cannot be checkpointed, and resume continues from the turn before', async () => {
    const store = blinkingStore()
    const { search } = searchTool(0)
    const agent = createAgent({ model: searchingModel(), tools: [search], checkpoints: store })
    let failures = 1
    store.down = (snapshot) => snapshot.turn === 1 && failures-- > 0
    await expect(agent.run({ input: 'plan', runId: 'turn' })).rejects.toThrow(
      'checkpoints store "orders-db" failed to save the checkpoint of turn 1 of run "turn": connection refused',
    )
    expect(await store.load('turn')).toMatchObject({ status: 'running', turn: 0 })
    expect(await agent.resume('turn')).toMatchObject({ status: 'completed', output: 'found hotels | found flights', turns: 2 })
  })

  it('rejects when the completed checkpoint cannot be saved, and a resume answers the run again', async () => {
    const store = blinkingStore()
    const { search } = searchTool(0)
    const agent = createAgent({ model: searchingModel(), tools: [search], checkpoints: store })
    let failures = 1
    store.down = (snapshot) => snapshot.status === 'completed' && failures-- > 0
    await expect(agent.run({ input: 'plan', runId: 'done' })).rejects.toMatchObject({
      kind: 'fatal',
      details: { checkpoint: 'the checkpoint of turn 2' },
    })
    expect(await agent.resume('done')).toMatchObject({ status: 'completed', output: 'found hotels | found flights' })
    expect(await store.load('done')).toMatchObject({ status: 'completed' })
  })

  it('names a thrown non-Error and a store without a name, and still leaves the last checkpoint alone', async () => {
    const inner = memoryCheckpoints()
    let saves = 0
    const store: CheckpointStore = {
      save: (snapshot) => {
        if (saves++ >= 1) throw 'socket hang up'
        return inner.save(snapshot)
      },
      load: (runId) => inner.load(runId),
    }
    const { search } = searchTool(0)
    const agent = createAgent({ model: searchingModel(), tools: [search], checkpoints: store })
    await expect(agent.run({ input: 'plan', runId: 'odd' })).rejects.toThrow(
      'the checkpoints store failed to save the checkpoint of turn 1 of run "odd": socket hang up',
    )
    expect(await inner.load('odd')).toMatchObject({ status: 'running', turn: 0 })
  })

  it('still saves the stopped checkpoint of a run stopped by a hard error, and answers the stop as the outcome', async () => {
    const store = blinkingStore()
    const crash = defineTool({
      name: 'search',
      description: 'Search',
      input: z.object({ q: z.string() }),
      execute: () => {
        throw new ToolError('bad_config', 'no API key', { category: 'fatal' })
      },
    })
    const outcome = await createAgent({ model: searchingModel(), tools: [crash], checkpoints: store }).run({ input: 'x', runId: 'hard' })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'fatal' } })
    expect(await store.load('hard')).toMatchObject({ status: 'stopped' })
  })
})
