import { describe, expect, it } from 'vitest'
import { type BreakerState, READ_MARGIN_MS, type UpdateRound, updateRounds } from './index.js'

const closed: BreakerState = {
  circuit: 'closed',
  generation: 0,
  counts: null,
  failures: 0,
  openedAt: 0,
  openMs: 0,
  opens: 0,
  probes: [],
  seq: 0,
}
const fail = (current: BreakerState | undefined): BreakerState => ({ ...(current ?? closed), failures: (current ?? closed).failures + 1 })
const live = () => new AbortController().signal

/** A shared store whose server clock runs 1e12 ms ahead of the worker's, with the rounds it ran. */
function serverStore(runRound?: (round: UpdateRound) => Promise<void>) {
  const worker = { t: 5_000 }
  const server = { offset: 1e12, stored: undefined as BreakerState | undefined, rounds: 0, writes: 0 }
  const enqueue = updateRounds({ now: () => worker.t }, async (_key, round) => {
    server.rounds++
    await Promise.resolve()
    if (runRound !== undefined) return runRound(round)
    const next = round.apply(server.stored, worker.t + server.offset)
    if (next !== server.stored) {
      server.stored = next
      server.writes++
    }
  })
  return { worker, server, enqueue }
}

describe('updateRounds: concurrent updates of one key in one round, in call order, on the server clock', () => {
  it('applies concurrent updates of one key in call order to one read and writes once', async () => {
    const { server, enqueue } = serverStore()
    const first = enqueue('search', fail, live())
    const rest = await Promise.all([enqueue('search', fail, live()), enqueue('search', fail, live()), enqueue('search', fail, live())])
    expect((await first).failures).toBe(1)
    expect(rest.map((s) => s.failures)).toEqual([2, 3, 4])
    expect(server).toMatchObject({ rounds: 2, writes: 2 })
    expect(server.stored?.failures).toBe(4)
  })

  it('keeps times in the server clock and hands them to each caller in its own clock, as ages', async () => {
    const { worker, server, enqueue } = serverStore()
    await enqueue('search', (current) => ({ ...(current ?? closed), circuit: 'open', openedAt: worker.t - 200 }), live())
    expect(server.stored?.openedAt).toBe(worker.t + server.offset - 200 + READ_MARGIN_MS)
    worker.t += 1000
    const seen = await enqueue('search', (current) => current ?? closed, live())
    expect(worker.t - seen.openedAt).toBe(1200)
  })

  it('answers nobody before the round resolves, and rejects everyone of a round that rejects', async () => {
    let finish: (() => void) | undefined
    const { enqueue } = serverStore(async (round) => {
      round.apply(undefined, 1e12)
      await new Promise<void>((resolve) => {
        finish = resolve
      })
    })
    let answered = false
    const update = enqueue('search', fail, live()).then(() => (answered = true))
    await new Promise((resolve) => setImmediate(resolve))
    expect(answered).toBe(false)
    finish?.()
    await update
    expect(answered).toBe(true)

    const broken = serverStore(async () => Promise.reject(new Error('connection lost')))
    const both = [broken.enqueue('k', fail, live()), broken.enqueue('k', fail, live())]
    for (const update of both) await expect(update).rejects.toThrow('connection lost')
  })

  it('rejects only the caller whose change threw, and leaves a caller past its deadline out of the write', async () => {
    const { server, enqueue } = serverStore()
    const gaveUp = new AbortController()
    const blocking = enqueue('search', fail, live())
    const late = enqueue('search', fail, gaveUp.signal)
    const throwing = enqueue(
      'search',
      () => {
        throw new Error('bad change')
      },
      live(),
    )
    const after = enqueue('search', fail, live())
    gaveUp.abort()
    await blocking
    await expect(throwing).rejects.toThrow('bad change')
    expect((await after).failures).toBe(2)
    await expect(late).rejects.toMatchObject({ name: 'AbortError' })
    expect(server.stored?.failures).toBe(2)
  })

  it('runs no round at all when every caller gave up before it started', async () => {
    const { server, enqueue } = serverStore()
    const gaveUp = new AbortController()
    const blocking = enqueue('search', fail, live())
    const late = enqueue('search', fail, gaveUp.signal)
    gaveUp.abort(new Error('deadline passed'))
    await blocking
    await expect(late).rejects.toThrow('deadline passed')
    expect(server).toMatchObject({ rounds: 1, writes: 1 })
  })
})
