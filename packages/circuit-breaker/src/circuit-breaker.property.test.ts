import { createStack, defineTool, LoopError, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type BreakerStore, circuitBreaker, consecutive, memoryBreakerStore } from './index.js'

type Op =
  | { kind: 'call' }
  | { kind: 'answer'; pick: number; outcome: 'ok' | 'timeout' | 'not_found' }
  | { kind: 'cancel'; pick: number }
  | { kind: 'advance'; ms: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'call' as const }), weight: 3 },
  {
    arbitrary: fc.record({
      kind: fc.constant('answer' as const),
      pick: fc.nat(),
      outcome: fc.constantFrom('ok', 'timeout', 'timeout', 'not_found'),
    }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 150 }) }), weight: 2 },
)

/** A store that answers a microtask later, so admissions of concurrent calls interleave with the store's replies. */
function asyncStore(): BreakerStore {
  const inner = memoryBreakerStore()
  return {
    get: async (key) => inner.get(key),
    update: async (key, change) => {
      await Promise.resolve()
      return inner.update(key, change)
    },
  }
}

describe('circuitBreaker under random interleavings', () => {
  for (const storeKind of ['memory', 'async store'] as const) {
    it(`never lets more than halfOpenProbes probes of one half-open period run in the tool at once (${storeKind})`, async () => {
      let probesSeen = 0
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 3 }),
          fc.integer({ min: 1, max: 2 }),
          fc.array(op, { minLength: 30, maxLength: 90 }),
          async (k, threshold, ops) => {
            const clock = manualClock()
            const running = new Map<string, { resolve: (v: string) => void; reject: (e: unknown) => void }>()
            const tool = defineTool({
              name: 'flaky',
              description: 'Sometimes fails',
              input: z.object({ id: z.string() }),
              effect: 'read',
              execute: ({ id }, { signal }) =>
                new Promise<string>((resolve, reject) => {
                  const onAbort = () => {
                    running.delete(id)
                    reject(signal.reason)
                  }
                  signal.addEventListener('abort', onAbort, { once: true })
                  const settle = () => {
                    running.delete(id)
                    signal.removeEventListener('abort', onAbort)
                  }
                  running.set(id, {
                    resolve: (v) => {
                      settle()
                      resolve(v)
                    },
                    reject: (e) => {
                      settle()
                      reject(e)
                    },
                  })
                }),
            })
            const breaker = circuitBreaker({
              policy: consecutive({ threshold }),
              cooldownMs: 100,
              halfOpenProbes: k,
              maxHalfOpenMs: 1_000_000_000,
              ...(storeKind === 'async store' ? { store: asyncStore() } : {}),
            })
            const stack = createStack({ middleware: [breaker], tools: [tool], clock })
            let circuit = 'closed'
            let period = 0
            let worst = 0
            const probeOf = new Map<string, number>()
            const check = () => {
              if (circuit !== 'half-open') return
              let live = 0
              for (const id of running.keys()) if (probeOf.get(id) === period) live++
              worst = Math.max(worst, live)
            }
            stack.on((e) => {
              if (e.type === 'circuit-breaker.state') {
                circuit = e.to as string
                if (e.to === 'half-open') period++
              }
              if (e.type === 'circuit-breaker.probe') {
                probeOf.set(e.callId, period)
                probesSeen++
              }
              check()
            })

            const controllers = new Map<string, AbortController>()
            const dispatches: Promise<unknown>[] = []
            for (const step of ops) {
              if (step.kind === 'call') {
                const id = `c${controllers.size}`
                const controller = new AbortController()
                controllers.set(id, controller)
                const done = stack.dispatch({ id, name: 'flaky', args: { id } }, { signal: controller.signal }).catch((e: unknown) => {
                  if (!LoopError.is(e) || e.kind !== 'cancelled') throw e
                })
                dispatches.push(done)
              } else if (step.kind === 'advance') {
                await clock.advance(step.ms)
              } else {
                const ids = [...running.keys()]
                const id = ids[step.pick % Math.max(1, ids.length)]
                if (id === undefined) continue
                if (step.kind === 'cancel') controllers.get(id)?.abort()
                else if (step.outcome === 'ok') running.get(id)?.resolve('fine')
                else running.get(id)?.reject(new ToolError(step.outcome, `${step.outcome} in the test`))
              }
              await clock.advance(0)
              check()
            }
            for (const controller of controllers.values()) controller.abort()
            await Promise.all(dispatches)
            expect(worst).toBeLessThanOrEqual(k)
          },
        ),
        { numRuns: 150 },
      )
      // The property must have met half-open circuits to mean anything.
      expect(probesSeen).toBeGreaterThan(50)
      // 150 runs of real stacks: ~4-5 s on a machine at load 16, past vitest's default 5 s.
    }, 20_000)
  }
})
