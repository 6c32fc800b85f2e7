import { effects, spread } from '../fleet.js'
import type { SceneContext, SceneReport } from './scene.js'

/**
 * Worker 1 sees the upstream fail three times and the circuit opens for the whole fleet: worker 2 is
 * refused without calling. After the cooldown, 100 calls at once across the fleet run one probe.
 *
 * @example
 * const report = await breaker(context)
 */
export async function breaker({ workers, config }: SceneContext): Promise<SceneReport> {
  const [first, second] = workers
  if (first === undefined || second === undefined) throw new Error('the breaker scene needs two workers')
  const failed = await first.send({ tool: 'search', args: { q: 'down' }, calls: 3, sequential: true, upstreamDown: true })
  const before = effects(config.effects, 'search other')
  const refused = await second.one({ tool: 'search', args: { q: 'other' } })
  const calledWhileOpen = effects(config.effects, 'search other') - before

  // The cooldown runs on Redis's clock; worker 2 was told how much of it is left.
  // The probe holds 2 s so that every worker's calls arrive while it runs, even on a loaded machine (at 500 ms a
  // slow worker's calls found the circuit closed again and ran: two "probes").
  await new Promise((resolve) => setTimeout(resolve, (refused.retryAfterMs ?? config.cooldownMs) + 20))
  const replies = await Promise.all(
    spread(100, workers.length).map((calls, i) =>
      workers[i]?.send({ tool: 'search', args: { q: 'probe' }, calls, upstreamDown: false, holdMs: 2000 }),
    ),
  )
  const results = replies.flat().filter((r) => r !== undefined)
  const after = await second.one({ tool: 'search', args: { q: 'after' } })
  return {
    title: 'one circuit for the fleet',
    figures: [
      ['worker 1: failures before the circuit opened', failed.filter((r) => r.code === 'upstream_error').length],
      ['worker 2: answer while open', `${refused.code} (retry in ${refused.retryAfterMs} ms)`],
      ['worker 2: upstream calls while open', calledWhileOpen],
      [`after the ${config.cooldownMs} ms cooldown: calls at once`, results.length],
      ['probes run (upstream calls)', effects(config.effects, 'search probe')],
      ['refused circuit_open while the probe ran', results.filter((r) => r.code === 'circuit_open').length],
      ['next call after the probe succeeded', after.ok ? 'ok (closed)' : String(after.code)],
    ],
  }
}
