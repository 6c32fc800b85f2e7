import { effects, spread } from '../fleet.js'
import type { SceneContext, SceneReport } from './scene.js'

/**
 * 50 identical write calls at once, spread over the whole fleet: the card is charged once, and every
 * other call, in every process, receives that one charge's result.
 *
 * @example
 * const report = await burst(context)
 */
export async function burst({ workers, config }: SceneContext): Promise<SceneReport> {
  const started = performance.now()
  const replies = await Promise.all(
    spread(50, workers.length).map((calls, i) =>
      workers[i]?.send({ tool: 'charge_card', args: { order: 'o-burst', amount: 42 }, calls, runId: 'run-burst' }),
    ),
  )
  const results = replies.flat().filter((r) => r !== undefined)
  return {
    title: `50 identical charge_card calls at once across ${workers.length} workers`,
    figures: [
      ['side effects (cards charged)', effects(config.effects, 'charge o-burst')],
      ['calls answered ok', results.filter((r) => r.ok).length],
      ['answered by replay', results.filter((r) => r.replayed).length],
      ['wall time', `${Math.round(performance.now() - started)} ms (the charge holds ${config.holdMs} ms)`],
    ],
  }
}
