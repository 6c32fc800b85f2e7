import { defineMiddleware } from '@shallot/core'
import { rateLimit, rateLimitOptionsSchema } from './rate-limit.js'

/**
 * The rate limiter as a config file names it: `- "@acme/shallot-rate-limit": { rps: 5 }`, in `stack:` for
 * tool calls and in `modelMiddleware:` for model calls. `@shallot/config` imports this package by name and
 * takes this default export.
 *
 * @example
 * const layer = rateLimitDefinition.build({ rps: 5, burst: 2 })
 */
export const rateLimitDefinition = defineMiddleware({
  name: '@acme/shallot-rate-limit',
  description: 'A token bucket per tool and per model; a call over the limit is refused with rate_limited and retryAfterMs.',
  options: rateLimitOptionsSchema,
  create: (options) => rateLimit(options).wrapToolCall,
  createModel: (options) => rateLimit(options).wrapModelCall,
})
