import { createRun, createStack, defineTool, ToolError } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { breakerMachine } from './breaker-machine.js'
import { circuitBreaker, consecutive, type FailurePolicy, sampling } from './index.js'

const machineWith = (policy: FailurePolicy = consecutive({ threshold: 5 }) as FailurePolicy) =>
  breakerMachine({ policy, cooldownMs: 30_000, cooldownGrowth: 1, maxCooldownMs: 300_000, halfOpenProbes: 1, maxHalfOpenMs: 60_000 })

describe('the breaker counts every request a failed call made', () => {
  it('opens a consecutive({ threshold: 5 }) circuit on the second call that made 3 requests', () => {
    const machine = machineWith()
    const first = machine.admit(undefined, 0)
    const after1 = machine.settle(first.state, first, 'failure', 1, { attempts: 3 })
    expect(after1.state).toMatchObject({ circuit: 'closed', counts: { failures: 3 } })
    const second = machine.admit(after1.state, 2)
    const after2 = machine.settle(second.state, second, 'failure', 3, { attempts: 3 })
    expect(after2.state.circuit).toBe('open')
    expect(after2.change).toMatchObject({ from: 'closed', to: 'open', reason: '6 consecutive failures' })
  })

  it('counts a success once, whatever it took, and resets the streak', () => {
    const machine = machineWith()
    const a = machine.admit(undefined, 0)
    const failed = machine.settle(a.state, a, 'failure', 1, { attempts: 4 })
    const b = machine.admit(failed.state, 2)
    expect(machine.settle(b.state, b, 'success', 3, { attempts: 3 }).state).toMatchObject({ counts: { failures: 0 } })
  })

  it('reads a nonsense count as one request and caps a huge one at the retry ceiling (6)', () => {
    const machine = machineWith(consecutive({ threshold: 100 }))
    for (const [attempts, counted] of [
      [0, 1],
      [-3, 1],
      [Number.NaN, 1],
      [2.5, 1],
      [Number.POSITIVE_INFINITY, 1],
      [1_000_000, 6],
    ] as const) {
      const a = machine.admit(undefined, 0)
      expect(machine.settle(a.state, a, 'failure', 1, { attempts: attempts }).state).toMatchObject({ counts: { failures: counted } })
    }
  })

  it('weighs requests in a sampling window too', () => {
    const machine = machineWith(sampling({ failureRatio: 0.5, minimumThroughput: 4, windowMs: 60_000 }))
    const a = machine.admit(undefined, 0)
    const after = machine.settle(a.state, a, 'failure', 1, { attempts: 4 })
    expect(after.state.circuit).toBe('open')
  })

  it('through a stack: a retry inside the breaker makes a dead tool open the circuit after threshold requests', async () => {
    const clock = manualClock()
    let requests = 0
    const dead = defineTool({
      name: 'find_order',
      description: 'Looks an order up',
      input: z.object({ id: z.string() }),
      effect: 'read',
      execute: () => {
        requests++
        throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient' })
      },
    })
    // A retry of its own, three requests per call, so this test needs no other package.
    const retryThrice = async (ctx: { attempt: number }, next: () => Promise<void>) => {
      for (;;) {
        try {
          return await next()
        } catch (err) {
          if (ctx.attempt >= 3) throw err
          ctx.attempt++
        }
      }
    }
    const stack = createStack({
      tools: [dead],
      middleware: [circuitBreaker({ policy: consecutive({ threshold: 5 }) }), retryThrice],
      clock,
      random: seededRandom(1),
    })
    const run = createRun()
    const codes: string[] = []
    for (let i = 0; i < 4; i++)
      codes.push((await stack.dispatch({ id: `c${i}`, name: 'find_order', args: { id: `o-${i}` } }, { run })).error?.code ?? 'ok')
    expect(codes).toEqual(['upstream_error', 'upstream_error', 'circuit_open', 'circuit_open'])
    expect(requests).toBe(6)
  })
})
