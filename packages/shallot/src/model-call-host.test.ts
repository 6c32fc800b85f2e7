// The model-call host the framework integrations share, through the layers a user lists: retries with the
// default model stack, a deadline that cuts a model that never answers, a caller's cancel, a late answer dropped,
// a layer that never calls next(), a throwing event listener.

import type { ModelMiddleware } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { defaultModelMiddleware, LoopError, type ModelAdapter, modelCallHost } from './index.js'

const adapter: ModelAdapter = { generate: () => Promise.reject(new Error('the host asks through ask(), not the adapter')) }
const model = { name: 'primary', adapter }
const status = (code: number) => Object.assign(new Error(`HTTP ${code}`), { status: code })

/** Moves the manual clock until `pending` settles: the default model stack waits between its attempts. */
async function driven<T>(clock: ReturnType<typeof manualClock>, pending: Promise<T>): Promise<T> {
  let settled = false
  pending.then(
    () => (settled = true),
    () => (settled = true),
  )
  while (!settled) await clock.runAll()
  return pending
}

describe('modelCallHost', () => {
  it('retries a 503 twice through the default model stack and returns the answer, with model.retry events', async () => {
    const clock = manualClock()
    const events: string[] = []
    const host = modelCallHost({ modelMiddleware: defaultModelMiddleware(), clock, random: () => 0, onEvent: (e) => events.push(e.type) })
    let asked = 0
    const answer = await driven(
      clock,
      host.call({
        model,
        ask: async () => {
          asked++
          if (asked < 3) throw status(503)
          return 'hello'
        },
      }),
    )
    expect(answer).toBe('hello')
    expect(asked).toBe(3)
    expect(events.filter((t) => t === 'model.retry')).toHaveLength(2)
  })

  it('does not retry a 401: the classifier ends the call as user_input_required (a key to fix, not a wait)', async () => {
    const host = modelCallHost({ modelMiddleware: defaultModelMiddleware(), clock: manualClock(), random: () => 0 })
    let asked = 0
    const failure = await host
      .call({
        model,
        ask: async () => {
          asked++
          throw status(401)
        },
      })
      .catch((e: unknown) => e)
    expect(LoopError.is(failure) && failure.kind).toBe('user_input_required')
    expect(asked).toBe(1)
  })

  it('cuts a model that never answers at the timeout layer, aborts its signal, and drops its late answer', async () => {
    const clock = manualClock()
    const host = modelCallHost({ modelMiddleware: defaultModelMiddleware({ retry: false, timeout: { ms: 1000 } }), clock })
    const signals: AbortSignal[] = []
    let late: (value: string) => void = () => {}
    const pending = host.call({
      model,
      ask: ({ signal }) => {
        signals.push(signal)
        return new Promise<string>((resolve) => {
          late = resolve
        })
      },
    })
    const outcome = pending.catch((e: unknown) => e)
    await clock.advance(1000)
    const failure = await outcome
    expect(LoopError.is(failure) && failure.kind).toBe('model_failed')
    expect(signals[0]?.aborted).toBe(true)
    late('too late')
  })

  it("ends as cancelled when the caller's signal aborts mid-call, and the model's signal aborts with it", async () => {
    const host = modelCallHost({ modelMiddleware: defaultModelMiddleware(), clock: manualClock() })
    const caller = new AbortController()
    let seen: AbortSignal | undefined
    const pending = host.call({
      model,
      signal: caller.signal,
      ask: ({ signal }) => {
        seen = signal
        return new Promise<string>(() => {})
      },
    })
    const outcome = pending.catch((e: unknown) => e)
    await Promise.resolve()
    caller.abort(new Error('user pressed stop'))
    const failure = await outcome
    expect(LoopError.is(failure) && failure.kind).toBe('cancelled')
    expect(seen?.aborted).toBe(true)
  })

  it('says which fix a layer that returns without calling next() needs', async () => {
    const skip: ModelMiddleware = async () => {}
    const host = modelCallHost({ modelMiddleware: [skip] })
    const failure = await host.call({ model, ask: async () => 'never asked' }).catch((e: unknown) => e)
    expect(LoopError.is(failure) && failure.kind).toBe('model_failed')
    expect(String((failure as LoopError).details?.fix)).toContain('next()')
  })

  it('goes on when an event listener throws', async () => {
    const clock = manualClock()
    const host = modelCallHost({
      modelMiddleware: defaultModelMiddleware(),
      clock,
      random: () => 0,
      onEvent: () => {
        throw new Error('listener bug')
      },
    })
    let asked = 0
    const answer = await driven(
      clock,
      host.call({
        model,
        ask: async () => {
          asked++
          if (asked === 1) throw status(503)
          return 42
        },
      }),
    )
    expect(answer).toBe(42)
  })

  it('keeps one breaker per model across calls of the same host: three failed calls open it for the fourth', async () => {
    const host = modelCallHost({ modelMiddleware: defaultModelMiddleware({ retry: false }), clock: manualClock() })
    let asked = 0
    const ask = async () => {
      asked++
      throw status(503)
    }
    for (let i = 0; i < 3; i++) await host.call({ model, ask }).catch(() => {})
    const fourth = await host.call({ model, ask }).catch((e: unknown) => e)
    expect(asked).toBe(3)
    expect(LoopError.is(fourth) && fourth.kind).toBe('model_failed')
  })
})
