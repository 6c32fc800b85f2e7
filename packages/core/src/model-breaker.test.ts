import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { admitModel, CLOSED, type ModelBreakerState, settleModel } from './model-breaker.js'

const options = { threshold: 2, cooldownMs: 1000 }

function openAt(now: number, retryAfterMs?: number): ModelBreakerState {
  let state = settleModel(CLOSED, 'failure', now, options, false).state
  state = settleModel(state, 'failure', now, options, false, retryAfterMs).state
  return state
}

describe('the per-model breaker', () => {
  it('opens after threshold failures in a row; a success between resets the count', () => {
    let state = settleModel(CLOSED, 'failure', 0, options, false).state
    state = settleModel(state, 'success', 0, options, false).state
    expect(state).toBe(CLOSED)
    state = settleModel(state, 'failure', 0, options, false).state
    const opened = settleModel(state, 'failure', 5, options, false)
    expect(opened.change).toEqual({ from: 'closed', to: 'open', reason: '2 consecutive failures' })
    expect(opened.state).toMatchObject({ circuit: 'open', openedAt: 5, openMs: 1000 })
  })

  it('refuses while open, saying how long is left; a longer Retry-After stretches the cooldown', () => {
    expect(admitModel(openAt(0), 400)).toMatchObject({ pass: false, retryInMs: 600 })
    expect(admitModel(openAt(0, 5000), 4000)).toMatchObject({ pass: false, retryInMs: 1000 })
  })

  it('admits one probe after the cooldown and refuses a second while it is out', () => {
    const probe = admitModel(openAt(0), 1000)
    expect(probe).toMatchObject({ pass: true, probe: true, change: { from: 'open', to: 'half-open' } })
    expect(admitModel(probe.state, 1001)).toMatchObject({ pass: false, probe: false })
  })

  it('a successful probe closes the circuit; a failed one reopens it; a neutral one frees the slot', () => {
    const probe = admitModel(openAt(0), 1000)
    expect(settleModel(probe.state, 'success', 1100, options, true)).toMatchObject({ state: CLOSED, change: { to: 'closed' } })
    expect(settleModel(probe.state, 'failure', 1100, options, true)).toMatchObject({
      state: { circuit: 'open', openedAt: 1100 },
      change: { from: 'half-open', to: 'open', reason: 'probe failed' },
    })
    const freed = settleModel(probe.state, 'neutral', 1100, options, true).state
    expect(admitModel(freed, 1100)).toMatchObject({ pass: true, probe: true })
  })

  it('a late verdict of a call admitted under another circuit decides nothing', () => {
    const open = openAt(0)
    expect(settleModel(open, 'failure', 10, options, false).state).toBe(open)
    const halfOpen = admitModel(open, 1000).state
    expect(settleModel(halfOpen, 'success', 1010, options, false).state).toBe(halfOpen)
    expect(settleModel(CLOSED, 'failure', 0, options, true).state).toBe(CLOSED)
  })

  it('restarts a cooldown stamped by another clock in the future rather than wait out the gap', () => {
    const fromElsewhere = openAt(1_000_000)
    expect(admitModel(fromElsewhere, 10)).toMatchObject({ pass: false, retryInMs: 1000 })
  })

  it('never has two probes out at once, whatever the verdicts and times', () => {
    const step = fc.record({
      dt: fc.integer({ min: 0, max: 2000 }),
      verdict: fc.constantFrom('success' as const, 'failure' as const, 'neutral' as const),
      settleFirst: fc.boolean(),
    })
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        let state: ModelBreakerState = CLOSED
        let now = 0
        const outstanding: boolean[] = []
        for (const s of steps) {
          now += s.dt
          if (s.settleFirst && outstanding.length > 0) {
            const probe = outstanding.shift() as boolean
            state = settleModel(state, s.verdict, now, options, probe).state
            continue
          }
          const admission = admitModel(state, now)
          state = admission.state
          if (admission.pass) outstanding.push(admission.probe)
          expect(outstanding.filter(Boolean).length).toBeLessThanOrEqual(1)
        }
      }),
    )
  })
})
