import { type AnyTool, type Clock, createStack, type Stack, systemClock, type ToolContext } from '@shallot/core'
import { retry } from '@shallot/retry'
import { timeout } from '@shallot/timeout'
import { coalesce } from './index.js'

const tenantOf = (ctx: ToolContext) => String(ctx.run.state.tenant ?? 'anonymous')

/** Identical searches running at once for one tenant share one execution; each caller's retry still decides for itself. */
export function searchStack(search: AnyTool, clock: Clock = systemClock): Stack {
  return createStack({ tools: [search], clock, middleware: [retry(), coalesce({ scope: tenantOf }), timeout({ ms: 10_000 })] })
}
