import { type AnyTool, type Clock, createStack, type Stack, systemClock } from '@shallot/core'
import { timeout } from '@shallot/timeout'
import { bulkhead } from './index.js'

const hostOf = (url: unknown) => (typeof url === 'string' && URL.canParse(url) ? new URL(url).host : undefined)

/** At most 4 fetches per host at once and 10 waiting; the rest read a soft `overloaded` and try later. */
export function crawler(fetchPage: AnyTool, clock: Clock = systemClock): Stack {
  return createStack({
    tools: [fetchPage],
    clock,
    middleware: [
      bulkhead({ maxConcurrent: 4, maxQueue: 10, key: (ctx) => hostOf((ctx.call.args as { url?: unknown }).url) }),
      timeout({ ms: 10_000 }),
    ],
  })
}
