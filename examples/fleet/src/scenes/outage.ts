import { effects, until } from '../fleet.js'
import type { CallSummary } from '../protocol.js'
import { ms, type SceneContext, type SceneReport } from './scene.js'

/**
 * Redis stops: writes are refused softly (fail closed), reads run on each worker's local breaker,
 * no worker crashes. Redis restarts: the fleet is back, and what was stored before is replayed.
 *
 * @example
 * const report = await outage(context)
 */
export async function outage({ workers, redis, config }: SceneContext): Promise<SceneReport> {
  const [w0, w1] = workers
  if (w0 === undefined || w1 === undefined) throw new Error('the outage scene needs two workers')
  const charge = (order: string) => ({ tool: 'charge_card', args: { order, amount: 42 }, runId: 'run-outage' }) as const
  const kept = await w0.one(charge('o-kept'))
  await redis.stop()
  const refused = await w1.one(charge('o-during'))
  const read = await w0.one({ tool: 'search', args: { q: 'during' }, holdMs: 0 })
  const alive = workers.every((w) => w.alive)
  const restarting = performance.now()
  await redis.restart()
  let back: CallSummary | undefined
  await until(async () => {
    back = await w1.one(charge('o-during'))
    return back.ok
  }, 'the fleet to use Redis again')
  const backAfter = performance.now() - restarting
  const replayed = await w1.one(charge('o-kept'))
  return {
    title: 'Redis stopped, then restarted',
    figures: [
      ['write while down', `${refused.code} in ${ms(refused.ms)}`],
      ['cards charged while down', effects(config.effects, 'charge o-during') - (back?.ok ? 1 : 0)],
      [
        'read while down',
        `${read.ok ? 'ok' : read.code} (${read.events.includes('circuit-breaker.store_error') ? 'local breaker' : 'shared breaker'}) in ${ms(read.ms)}`,
      ],
      ['workers alive', alive ? `${workers.length} of ${workers.length}` : 'some crashed'],
      ['first successful write after restart', `${Math.round(backAfter)} ms after Redis started`],
      ['call stored before the outage, repeated after', replayed.replayed && kept.ok ? 'replayed (record kept)' : String(replayed.code)],
    ],
  }
}
