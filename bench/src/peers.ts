import { ConsecutiveBreaker, circuitBreaker, handleAll, retry, TimeoutStrategy, timeout, wrap } from 'cockatiel'
import koaCompose from 'koa-compose'
import CircuitBreaker from 'opossum'

/** The trivial async function every peer wraps. */
export const work = async (x: number) => x + 1

/** The floor: a bare await of the trivial function. */
export const floor = () => work(1)

/**
 * koa-compose 4.2.0 with seven layers as users write them, `async (ctx, next) => { await next() }`,
 * in front of the work: each layer pays for its own async frame, as shallot's layers do.
 */
export function koaSevenAsync(): () => Promise<unknown> {
  const layer = async (_ctx: { out?: number }, next: () => Promise<unknown>) => {
    await next()
  }
  const fn = koaCompose<{ out?: number }>([
    layer,
    layer,
    layer,
    layer,
    layer,
    layer,
    layer,
    async (ctx) => {
      ctx.out = await work(1)
    },
  ])
  return () => fn({})
}

/** cockatiel 3.2.1: wrap(retry, circuitBreaker, timeout), the usual trio. */
export function cockatielTrio(): () => Promise<unknown> {
  const policy = wrap(
    retry(handleAll, { maxAttempts: 3 }),
    circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
    timeout(5_000, TimeoutStrategy.Cooperative),
  )
  return () => policy.execute(() => work(1))
}

/** opossum 9 with a timeout (its breaker and timeout in one). */
export function opossumWithTimeout(): () => Promise<unknown> {
  const breaker = new CircuitBreaker(work, { timeout: 5_000, errorThresholdPercentage: 50, resetTimeout: 30_000 })
  return () => breaker.fire(1)
}
