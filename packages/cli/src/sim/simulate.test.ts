import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStack, type StackEvent } from '@shallot/core'
import { circuitBreaker, consecutive, defaultMiddleware, errorClassifier, panicCatcher, retry, timeout } from 'shallot'
import { afterAll, describe, expect, it } from 'vitest'
import { main } from '../cli.js'
import { type StackEnv, simulate } from './simulate.js'

async function sim(...argv: string[]): Promise<string[]> {
  const out: string[] = []
  const code = await main(['sim', ...argv], { out: (l) => out.push(l), err: () => {} })
  expect(code).toBe(0)
  return out
}

// Printed by the seeded simulation before its hot loop was made cheaper: the same seed must keep printing exactly this.
describe('shallot sim, seeded', () => {
  // The reconciled stack was added beside the others: their numbers are those printed before it.
  it('prints the same tables for a write tool under timeouts and 5xx, and the same stack reconciling every unknown outcome', async () => {
    expect(
      await sim('--runs', '40', '--steps', '5,20', '--seed', '4', '--fault-rate', '0.2', '--effect', 'write', '--faults', 'timeout,5xx'),
    ).toEqual([
      'shallot sim: 40 runs per cell, fault rate 0.2 per attempt (timeout, server_error), write tool, seed 4',
      '',
      'end-to-end success rate',
      '            steps        (1-p)^n       no retry  default stack     reconciled',
      '                5          32.8%          35.0%          35.0%          52.5%',
      '               20           1.2%           2.5%           2.5%           7.5%',
      '',
      'no retry',
      '     steps   success   attempts/step   p50 ms   p95 ms   retries   breaker trips   write retries refused',
      '         5     35.0%           1.000        0     2000         0               0                       0',
      '        20      2.5%           1.000        0     2000         0               0                       0',
      '',
      'default stack',
      '     steps   success   attempts/step   p50 ms   p95 ms   retries   breaker trips   write retries refused',
      '         5     35.0%           1.000        0     2000         0               0                      26',
      '        20      2.5%           1.000        0     2000         0               0                      39',
      '',
      'reconciled',
      '     steps   success   attempts/step   p50 ms   p95 ms   retries   breaker trips   write retries refused',
      '         5     52.5%           1.000        0     2000         0               0                      32',
      '        20      7.5%           1.000     2000     4000         0               0                      68',
      '',
      'unknown write outcomes (a write failed after its request may have reached the service)',
      '  stack           steps   landed anyway   unknown   found landed   found not landed   left unknown',
      '  default stack       5               -        26              0                  0             26',
      '  default stack      20               -        39              0                  0             39',
      '  reconciled          5              13        32             13                 19              0',
      '  reconciled         20              31        68             31                 37              0',
    ])
  })

  it('prints the same tables for an idempotent tool with latency and retries', async () => {
    expect(
      await sim('--runs', '40', '--steps', '10,30', '--seed', '6', '--fault-rate', '0.1', '--latency', '25', '--effect', 'idempotent'),
    ).toEqual([
      'shallot sim: 40 runs per cell, fault rate 0.1 per attempt (timeout, rate_limit, server_error, connection_reset), idempotent tool, seed 6',
      '',
      'end-to-end success rate',
      '            steps        (1-p)^n       no retry  default stack',
      '               10          34.9%          30.0%          97.5%',
      '               30           4.2%          10.0%          92.5%',
      '',
      'no retry',
      '     steps   success   attempts/step   p50 ms   p95 ms   retries   breaker trips   write retries refused',
      '        10     30.0%           1.000      250     2075         0               0                       0',
      '        30     10.0%           1.000      250     2075         0               0                       0',
      '',
      'default stack',
      '     steps   success   attempts/step   p50 ms   p95 ms   retries   breaker trips   write retries refused',
      '        10     97.5%           1.115     1275     4395        46               0                       0',
      '        30     92.5%           1.111     3860     7870       128               0                       0',
    ])
  })
})

// Printed before the layers parsed their defaults once and shared one compiled table of built-in rules.
describe('shallot sim, seeded, as the layers build their options', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shallot-sim-seeded-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('prints the same tables for the default read grid', async () => {
    expect(await sim('--runs', '30', '--seed', '1', '--fault-rate', '0.05')).toEqual([
      'shallot sim: 30 runs per cell, fault rate 0.05 per attempt (timeout, rate_limit, server_error, connection_reset), read tool, seed 1',
      '',
      'end-to-end success rate',
      '            steps        (1-p)^n       no retry  default stack',
      '               10          59.9%          63.3%          96.7%',
      '               50           7.7%           3.3%          96.7%',
      '              100           0.6%           0.0%          96.7%',
      '              200           0.0%           0.0%          93.3%',
      '',
      'no retry',
      '     steps   success   attempts/step   p50 ms   p95 ms   retries   breaker trips   write retries refused',
      '        10     63.3%           1.000        0     2000         0               0                       0',
      '        50      3.3%           1.000        0     2000         0               0                       0',
      '       100      0.0%           1.000        0     2000         0               0                       0',
      '       200      0.0%           1.000        0     2000         0               0                       0',
      '',
      'default stack',
      '     steps   success   attempts/step   p50 ms   p95 ms   retries   breaker trips   write retries refused',
      '        10     96.7%           1.037        0     2345        11               0                       0',
      '        50     96.7%           1.048     2199     6056        70               0                       0',
      '       100     96.7%           1.044     4143     7235       128               0                       0',
      '       200     93.3%           1.045     8056    13350       258               0                       0',
    ])
  })

  it('prints the same tables for a config stack whose breaker, inside retry, trips', async () => {
    const file = join(dir, 'tripping.yaml')
    writeFileSync(
      file,
      [
        'stack:',
        '  - panic-catcher',
        '  - retry: { maxAttempts: 4, baseMs: 20 }',
        '  - circuit-breaker: { cooldownMs: 500, policy: { consecutive: { threshold: 2 } } }',
        '  - error-classifier',
        '  - timeout: { ms: 200 }',
        '',
      ].join('\n'),
    )
    const out = await sim('--runs', '40', '--steps', '5,20', '--seed', '3', '--config', file, '--fault-rate', '0.2', '--latency', '10')
    expect(out).toEqual([
      'shallot sim: 40 runs per cell, fault rate 0.2 per attempt (timeout, rate_limit, server_error, connection_reset), read tool, seed 3',
      '',
      'end-to-end success rate',
      '            steps        (1-p)^n       no retry  tripping.yaml',
      '                5          32.8%          27.5%          82.5%',
      '               20           1.2%           5.0%          45.0%',
      '',
      'no retry',
      '     steps   success   attempts/step   p50 ms   p95 ms   retries   breaker trips   write retries refused',
      '         5     27.5%           1.000       50     2030         0               0                       0',
      '        20      5.0%           1.000       50     2070         0               0                       0',
      '',
      'tripping.yaml',
      '     steps   success   attempts/step   p50 ms   p95 ms   retries   breaker trips   write retries refused',
      '         5     82.5%           1.204       76     1518        43               8                       0',
      '        20     45.0%           1.198     1240     3286       127              26                       0',
    ])
  })
})

describe('simulate', () => {
  it('counts breaker trips, retries and refused write retries exactly as the stack announces them', async () => {
    for (const effect of ['read', 'write'] as const) {
      const heard = { trips: 0, retries: 0, writeRefused: 0 }
      const stack = (env: StackEnv) => {
        const built = createStack({
          ...env,
          middleware: [
            // The breaker inside retry sees every attempt, so two failed attempts of one call trip it.
            panicCatcher(),
            retry({ maxAttempts: 6 }),
            circuitBreaker({ policy: consecutive({ threshold: 2 }), cooldownMs: 500 }),
            errorClassifier(),
            timeout({ ms: 300 }),
          ],
        })
        built.on((event: StackEvent) => {
          if (event.type === 'circuit-breaker.state' && event.to === 'open') heard.trips++
          else if (event.type === 'retry.scheduled') heard.retries++
          else if (event.type === 'retry.stopped' && event.reason === 'unsafe_write') heard.writeRefused++
        })
        return built
      }
      const result = await simulate({
        steps: 20,
        runs: 60,
        faultRate: 0.4,
        faults: ['timeout', 'server_error', 'connection_reset'],
        latencyMs: 0,
        effect,
        seed: 5,
        stack,
      })
      expect(result.breakerTrips).toBe(heard.trips)
      expect(result.retries).toBe(heard.retries)
      expect(result.writeRetriesRefused).toBe(heard.writeRefused)
      // A write is never retried after a failure whose outcome is unknown, so only reads get far enough to trip the breaker.
      expect(effect === 'read' ? Math.min(result.breakerTrips, result.retries) : result.writeRetriesRefused).toBeGreaterThan(0)
    }
  })

  it('reconciles every unknown write outcome of the default stack: found landed is exactly what landed, and more runs complete', async () => {
    const faults = { steps: 30, runs: 80, faultRate: 0.15, latencyMs: 10, effect: 'write', seed: 9 } as const
    const all = ['timeout', 'server_error', 'connection_reset', 'rate_limit', 'connection_refused'] as const
    const stack = (env: StackEnv) => createStack({ ...env, middleware: defaultMiddleware({ timeout: { ms: 500 } }) })
    const plain = await simulate({ ...faults, faults: all, stack })
    const reconciled = await simulate({ ...faults, faults: all, stack, reconcile: true })
    expect(plain.unknownOutcomes).toBeGreaterThan(0)
    expect(plain.reconciledApplied + plain.reconciledNotApplied).toBe(0)
    expect(reconciled.landedFaults).toBeGreaterThan(0)
    expect(reconciled.reconciledApplied).toBe(reconciled.landedFaults)
    expect(reconciled.reconciledApplied + reconciled.reconciledNotApplied).toBe(reconciled.unknownOutcomes)
    expect(reconciled.successRate).toBeGreaterThan(plain.successRate)
  })

  it('asks no reconciler when the stack has no idempotency layer to ask it, and counts nothing as unknown', async () => {
    const result = await simulate({
      steps: 20,
      runs: 30,
      faultRate: 0.3,
      faults: ['timeout', 'server_error'],
      latencyMs: 0,
      effect: 'write',
      seed: 2,
      reconcile: true,
      stack: (env) => createStack({ ...env, middleware: [panicCatcher(), errorClassifier(), timeout({ ms: 300 })] }),
    })
    expect(result.landedFaults).toBeGreaterThan(0)
    expect([result.unknownOutcomes, result.reconciledApplied, result.reconciledNotApplied]).toEqual([0, 0, 0])
  })

  it('rejects when a stack never lets a call settle on virtual time', async () => {
    const hung = simulate({
      steps: 1,
      runs: 1,
      faultRate: 0,
      faults: ['timeout'],
      latencyMs: 0,
      effect: 'read',
      seed: 1,
      stack: (env) =>
        createStack({
          ...env,
          middleware: [
            async () => {
              for (;;) await env.clock.sleep(1)
            },
          ],
        }),
    })
    await expect(hung).rejects.toThrow(/still \d+ sleepers after/)
  })
})
