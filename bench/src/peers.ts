import { ConsecutiveBreaker, circuitBreaker, handleAll, retry, TimeoutStrategy, timeout, wrap } from 'cockatiel'
import koaCompose from 'koa-compose'
import CircuitBreaker from 'opossum'

/** The trivial async function every peer wraps. */
export const work = async (x: number) => x + 1

/** The floor: a bare await of the trivial function. */
export const floor = () => work(1)

/** koa-compose 4.2.0 with seven no-op middlewares in front of the work. */
export function koaSevenNoop(): () => Promise<unknown> {
  const noop = (_ctx: { out?: number }, next: () => Promise<unknown>) => next()
  const fn = koaCompose<{ out?: number }>([
    noop,
    noop,
    noop,
    noop,
    noop,
    noop,
    async (ctx, next) => {
      ctx.out = await work(1)
      return next()
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
