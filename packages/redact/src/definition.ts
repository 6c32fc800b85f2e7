import { defineMiddleware } from '@shallot/core'
import { z } from 'zod'
import { redact, redactDataShape, redactFilePatternsSchema } from './redact.js'

/**
 * The options a config file can hold: every option, with `patterns` as literal strings (a RegExp
 * cannot be written in a file).
 *
 * @example
 * redactFileOptionsSchema.parse({ strategies: { card: 'mask' }, patterns: [{ name: 'project', pattern: 'Project Nightjar' }] })
 */
export const redactFileOptionsSchema = z.strictObject({ ...redactDataShape, patterns: redactFilePatternsSchema })

/**
 * `redact` as a middleware definition, for config files and registries.
 *
 * @example
 * const layer = redactDefinition.build({ strategies: { api_key: 'block' } })
 */
export const redactDefinition = defineMiddleware({
  name: 'redact',
  description:
    'Redacts, masks or hashes e-mail addresses, card numbers, IBANs, IP addresses, API keys and your patterns in tool results, or withholds the result (blocked_by_policy).',
  options: redactFileOptionsSchema,
  create: (options) => redact(options),
})
