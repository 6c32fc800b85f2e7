import { effects, startFleet, stopFleet, until } from '../fleet.js'
import type { SceneContext, SceneReport } from './scene.js'

/**
 * A worker SIGKILLed mid-charge leaves `outcome_unknown` for the next identical call, not a second
 * charge; a worker SIGSTOPped past its lease cannot record its result when it is continued.
 *
 * @example
 * const report = await crash(context)
 */
export async function crash({ workers, config }: SceneContext): Promise<SceneReport> {
  const [other] = workers
  if (other === undefined) throw new Error('the crash scene needs a worker')
  const [killed] = await startFleet(1, { ...config, leaseMs: 500, holdMs: 10_000 })
  const kill = { tool: 'charge_card', args: { order: 'o-kill', amount: 42 }, runId: 'run-kill' } as const
  void killed?.send(kill)
  await until(() => effects(config.effects, 'charge o-kill') === 1, 'the charge to start')
  killed?.child.kill('SIGKILL')
  const afterKill = await other.one(kill)

  const [paused] = await startFleet(1, { ...config, leaseMs: 500, holdMs: 400 })
  if (paused === undefined) throw new Error('no worker')
  const stop = { tool: 'charge_card', args: { order: 'o-stop', amount: 42 }, runId: 'run-stop' } as const
  const late = paused.one(stop)
  await until(() => effects(config.effects, 'charge o-stop') === 1, 'the charge to start')
  paused.child.kill('SIGSTOP')
  const whileStopped = await other.one(stop)
  paused.child.kill('SIGCONT')
  const continued = await late
  const afterStop = await other.one(stop)
  await stopFleet([paused])
  return {
    title: 'crashed and paused workers',
    figures: [
      ['SIGKILL mid-charge: next identical call', String(afterKill.code)],
      ['SIGKILL mid-charge: cards charged', effects(config.effects, 'charge o-kill')],
      ['SIGSTOP past the lease: identical call meanwhile', String(whileStopped.code)],
      [
        'SIGSTOP: on SIGCONT the stopped worker',
        continued.events.includes('idempotency.token_lost') ? 'token lost: result not recorded' : 'recorded',
      ],
      ['SIGSTOP: identical call afterwards', String(afterStop.code)],
      ['SIGSTOP: cards charged', effects(config.effects, 'charge o-stop')],
    ],
  }
}
