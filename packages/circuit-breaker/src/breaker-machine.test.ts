import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type BreakerMachineConfig, breakerMachine, type Ticket } from './breaker-machine.js'
import { type BreakerState, consecutive, sampling } from './index.js'

const config = (overrides: Partial<BreakerMachineConfig> = {}): BreakerMachineConfig => ({
  policy: consecutive({ threshold: 2 }),
  cooldownMs: 1000,
  cooldownGrowth: 1,
  maxCooldownMs: 10_000,
  halfOpenProbes: 1,
  maxHalfOpenMs: 5000,
  ...overrides,
})

/** Drives a machine by hand: no clock, just the `now` each step is given. */
function fail(machine: ReturnType<typeof breakerMachine>, state: BreakerState | undefined, now: number, retryAfterMs?: number) {
  const a = machine.admit(state, now)
  return machine.settle(a.state, a, 'failure', now, { retryAfterMs })
}

function opened(machine: ReturnType<typeof breakerMachine>, now = 0): BreakerState {
  return fail(machine, fail(machine, undefined, now).state, now).state
}

describe('breakerMachine', () => {
  it('admits calls of a closed circuit without changing its state', () => {
    const machine = breakerMachine(config())
    const a = machine.admit(machine.initial, 0)
    expect(a).toMatchObject({ pass: true, probe: 0, generation: 0, changes: [] })
    expect(a.state).toBe(machine.initial)
    expect(machine.settle(a.state, a, 'success', 1).state).toBe(machine.initial)
  })

  it('admits to a closed circuit without a time, and to no other circuit', () => {
    const machine = breakerMachine(config())
    expect(machine.admitClosed(undefined)).toMatchObject({ pass: true, probe: 0, state: machine.initial })
    expect(machine.admitClosed(opened(machine))).toBeUndefined()
  })

  it('calls a settlement quiet only when it would change and decide nothing', () => {
    const machine = breakerMachine(config())
    const closed = machine.admit(undefined, 0)
    const once = fail(machine, undefined, 0).state
    expect(machine.quiet(undefined, closed, 'success')).toBe(true)
    expect(machine.quiet(undefined, closed, 'neutral')).toBe(true)
    expect(machine.quiet(undefined, closed, 'failure')).toBe(false)
    expect(machine.quiet(once, closed, 'success')).toBe(false)
    const state = opened(machine)
    const probe = machine.admit(state, 1000)
    expect(machine.quiet(probe.state, probe, 'neutral')).toBe(false)
    expect(machine.quiet(state, closed, 'success')).toBe(false)
    const sampled = breakerMachine(config({ policy: sampling() }))
    expect(sampled.quiet(undefined, closed, 'success')).toBe(false)
  })

  it('opens on the policy’s word, with its reason, and bumps the generation', () => {
    const machine = breakerMachine(config())
    const once = fail(machine, undefined, 0)
    expect(once.state.circuit).toBe('closed')
    const twice = fail(machine, once.state, 10)
    expect(twice.change).toEqual({ from: 'closed', to: 'open', reason: '2 consecutive failures' })
    expect(twice.state).toMatchObject({ circuit: 'open', generation: 1, failures: 2, openedAt: 10, openMs: 1000 })
  })

  it('refuses while open with the remaining cooldown, then half-opens on the first call after it', () => {
    const machine = breakerMachine(config())
    const state = opened(machine)
    expect(machine.admit(state, 400)).toMatchObject({ pass: false, retryAfterMs: 600 })
    const probe = machine.admit(state, 1000)
    expect(probe).toMatchObject({
      pass: true,
      probe: 1,
      changes: [{ from: 'open', to: 'half-open', reason: 'cooldown of 1000 ms elapsed' }],
    })
    expect(machine.admit(probe.state, 1001)).toMatchObject({ pass: false, retryAfterMs: 4999 })
  })

  it('closes and resets on a probe’s success', () => {
    const machine = breakerMachine(config())
    const probe = machine.admit(opened(machine), 1000)
    const done = machine.settle(probe.state, probe, 'success', 1200)
    expect(done.change).toEqual({ from: 'half-open', to: 'closed', reason: 'probe succeeded' })
    expect(done.state).toMatchObject({ circuit: 'closed', failures: 0, opens: 0, probes: [], counts: { failures: 0 } })
  })

  it('reopens on a probe’s failure with a cooldown that grows up to its ceiling', () => {
    const machine = breakerMachine(config({ cooldownGrowth: 3, maxCooldownMs: 5000 }))
    let state = opened(machine)
    const lengths = [state.openMs]
    for (let i = 0; i < 3; i++) {
      const now = state.openedAt + state.openMs
      const probe = machine.admit(state, now)
      const done = machine.settle(probe.state, probe, 'failure', now)
      expect(done.change).toEqual({ from: 'half-open', to: 'open', reason: 'probe failed' })
      state = done.state
      lengths.push(state.openMs)
    }
    expect(lengths).toEqual([1000, 3000, 5000, 5000])
    expect(state.failures).toBe(5)
  })

  it('stays open as long as the tripping failure’s retryAfterMs asks, within maxCooldownMs', () => {
    const machine = breakerMachine(config())
    expect(fail(machine, fail(machine, undefined, 0).state, 0, 4000).state.openMs).toBe(4000)
    expect(fail(machine, fail(machine, undefined, 0).state, 0, 60_000).state.openMs).toBe(10_000)
  })

  it('lets a result from before the circuit opened decide nothing', () => {
    const machine = breakerMachine(config())
    const early = machine.admit(undefined, 0)
    const probe = machine.admit(opened(machine), 1000)
    const late = machine.settle(probe.state, early, 'success', 1100)
    expect(late).toMatchObject({ stale: true, change: undefined })
    expect(late.state).toBe(probe.state)
  })

  it('lets a probe older than maxHalfOpenMs decide nothing, even when nobody took its slot', () => {
    const machine = breakerMachine(config())
    const probe = machine.admit(opened(machine), 1000)
    expect(machine.settle(probe.state, probe, 'success', 6000)).toMatchObject({ stale: true, change: undefined })
    expect(machine.settle(probe.state, probe, 'success', 5999).change?.to).toBe('closed')
  })

  it('frees the slot of a probe that ends without a verdict', () => {
    const machine = breakerMachine(config())
    const probe = machine.admit(opened(machine), 1000)
    const freed = machine.settle(probe.state, probe, 'neutral', 1100)
    expect(freed).toMatchObject({ stale: false, change: undefined, state: { circuit: 'half-open', probes: [] } })
    expect(machine.admit(freed.state, 1100)).toMatchObject({ pass: true, probe: 2 })
  })

  it('restarts the cooldown of a state written under another clock instead of staying open until that clock’s time', () => {
    const machine = breakerMachine(config())
    const fromAnotherProcess = opened(machine, 9_000_000)
    expect(machine.admit(fromAnotherProcess, 50)).toMatchObject({ pass: false, retryAfterMs: 1000 })
    expect(machine.admit(machine.admit(fromAnotherProcess, 50).state, 1050).pass).toBe(true)
  })

  it('recognises only states it could have written', () => {
    const machine = breakerMachine(config())
    expect(machine.isState(opened(machine) as never)).toBe(true)
    expect(machine.isState(JSON.parse(JSON.stringify(opened(machine))))).toBe(true)
    for (const bad of [null, 3, [], {}, { ...machine.initial, circuit: 'ajar' }, { ...machine.initial, counts: { buckets: [] } }]) {
      expect(machine.isState(bad as never)).toBe(false)
    }
  })

  it('never holds more than halfOpenProbes live probes, whatever the interleaving', () => {
    const step = fc.oneof(
      fc.constant({ kind: 'admit' as const }),
      fc.record({
        kind: fc.constant('settle' as const),
        pick: fc.nat(),
        outcome: fc.constantFrom('success', 'failure', 'neutral') as never,
      }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 300 }) }),
    )
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: 200 }),
        fc.array(step, { maxLength: 120 }),
        (halfOpenProbes, threshold, cooldownMs, maxHalfOpenMs, steps) => {
          const machine = breakerMachine(
            config({ policy: consecutive({ threshold }), cooldownMs, maxCooldownMs: cooldownMs, halfOpenProbes, maxHalfOpenMs }),
          )
          let state = machine.initial
          let now = 0
          const open: Array<Ticket & { at: number }> = []
          for (const s of steps) {
            if (s.kind === 'advance') now += s.ms
            else if (s.kind === 'admit') {
              const a = machine.admit(state, now)
              state = a.state
              if (a.pass) open.push({ generation: a.generation, probe: a.probe, at: now })
            } else if (open.length > 0) {
              const [ticket] = open.splice(s.pick % open.length, 1)
              state = machine.settle(state, ticket as Ticket, s.outcome as 'success', now).state
            }
            const live = open.filter(
              (t) => t.probe !== 0 && state.circuit === 'half-open' && t.generation === state.generation && now - t.at < maxHalfOpenMs,
            )
            expect(live.length).toBeLessThanOrEqual(halfOpenProbes)
            expect(state.probes.length).toBeLessThanOrEqual(halfOpenProbes)
          }
        },
      ),
      { numRuns: 500 },
    )
  })

  it('with halfOpenSuccesses, never lets more than halfOpenProbes through per trial and never closes on fewer successes', () => {
    const step = fc.oneof(
      fc.constant({ kind: 'admit' as const }),
      fc.record({
        kind: fc.constant('settle' as const),
        pick: fc.nat(),
        // Mostly successes, so trials get far enough to close.
        outcome: fc.constantFrom('success', 'success', 'success', 'success', 'failure', 'neutral') as never,
      }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 100 }) }),
    )
    let closings = 0
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }).chain((m) => fc.tuple(fc.constant(m), fc.integer({ min: 1, max: m }))),
        fc.array(step, { minLength: 40, maxLength: 150 }),
        ([halfOpenProbes, halfOpenSuccesses], steps) => {
          const machine = breakerMachine(
            config({
              policy: consecutive({ threshold: 1 }),
              cooldownMs: 50,
              maxCooldownMs: 50,
              halfOpenProbes,
              halfOpenSuccesses,
              maxHalfOpenMs: 1e9,
            }),
          )
          // Starts open, so every run has trials to watch.
          let state = opened(machine)
          let now = 0
          let open: Ticket[] = []
          // Per trial: probes let through and not released (successes keep their place), and successes counted.
          let admitted = 0
          let successes = 0
          for (const s of steps) {
            if (s.kind === 'advance') now += s.ms
            else if (s.kind === 'admit') {
              const a = machine.admit(state, now)
              if (a.changes.some((c) => c.to === 'half-open')) {
                admitted = 0
                successes = 0
              }
              state = a.state
              if (a.pass) open.push({ generation: a.generation, probe: a.probe })
              if (a.pass && a.probe !== 0) admitted++
            } else if (open.length > 0) {
              const [ticket] = open.splice(s.pick % open.length, 1) as [Ticket]
              const before = state
              const outcome = s.outcome as 'success' | 'failure' | 'neutral'
              const done = machine.settle(state, ticket, outcome, now)
              state = done.state
              const live = ticket.probe !== 0 && !done.stale && before.circuit === 'half-open' && before.generation === ticket.generation
              if (live && outcome === 'neutral') admitted--
              if (live && outcome === 'success') successes++
              if (live && outcome === 'failure') expect(done.change).toMatchObject({ from: 'half-open', to: 'open' })
              if (done.change?.from === 'half-open' && done.change.to === 'closed') {
                closings++
                expect(successes).toBe(halfOpenSuccesses)
              }
              // Calls admitted before the circuit opened decide nothing (tested above); keep the live ones in play.
              if (done.change?.to === 'open') open = open.filter((t) => t.generation === state.generation)
            }
            if (state.circuit === 'half-open') expect(admitted).toBeLessThanOrEqual(halfOpenProbes)
          }
        },
      ),
      { numRuns: 500 },
    )
    expect(closings).toBeGreaterThan(100)
  })

  it('reads a half-open trial tally as a state, only while half-open', () => {
    const machine = breakerMachine(config({ halfOpenProbes: 3, halfOpenSuccesses: 2 }))
    const halfOpen = { ...opened(machine), circuit: 'half-open', counts: { probeSuccesses: 1 } }
    expect(machine.isState(halfOpen as never)).toBe(true)
    expect(machine.isState({ ...halfOpen, circuit: 'closed' } as never)).toBe(false)
    expect(machine.isState({ ...halfOpen, counts: { probeSuccesses: -1 } } as never)).toBe(false)
    expect(machine.isState({ ...halfOpen, counts: { probeSuccesses: 1, extra: 1 } } as never)).toBe(false)
  })

  it('refuses a halfOpenSuccesses its trial could never reach', () => {
    expect(() => breakerMachine(config({ halfOpenProbes: 2, halfOpenSuccesses: 3 }))).toThrow(RangeError)
    expect(() => breakerMachine(config({ halfOpenSuccesses: 0 }))).toThrow(RangeError)
  })
})
