import { ms, percentile, type SceneContext, type SceneReport } from './scene.js'

/**
 * Each worker runs guarded calls one after another (distinct orders, instant tools): the cost of
 * the shared stores per call, and the fleet's total rate.
 *
 * @example
 * const report = await throughput(context, 200)
 */
export async function throughput({ workers }: SceneContext, perWorker: number): Promise<SceneReport> {
  const started = performance.now()
  const writes = (
    await Promise.all(
      workers.map((w, i) =>
        w.send({
          tool: 'charge_card',
          args: { order: `tp-${i}`, amount: 1 },
          calls: perWorker,
          sequential: true,
          distinct: true,
          holdMs: 0,
        }),
      ),
    )
  ).flat()
  const seconds = (performance.now() - started) / 1000
  const reads = (
    await Promise.all(
      workers.map((w, i) => w.send({ tool: 'search', args: { q: `tp-${i}` }, calls: perWorker, sequential: true, holdMs: 0 })),
    )
  ).flat()
  const writeMs = writes.map((r) => r.ms)
  const readMs = reads.map((r) => r.ms)
  return {
    title: `${perWorker} calls one after another on each of ${workers.length} workers`,
    figures: [
      ['write call p50 / p99 (idempotency, breaker, retry)', `${ms(percentile(writeMs, 50))} / ${ms(percentile(writeMs, 99))}`],
      ['read call p50 / p99 (breaker, retry)', `${ms(percentile(readMs, 50))} / ${ms(percentile(readMs, 99))}`],
      ['fleet write rate', `${Math.round(writes.length / seconds)} calls/s`],
      [
        'all ok',
        writes.every((r) => r.ok) && reads.every((r) => r.ok)
          ? 'yes'
          : JSON.stringify([...writes, ...reads].filter((r) => !r.ok).slice(0, 3)),
      ],
    ],
  }
}
