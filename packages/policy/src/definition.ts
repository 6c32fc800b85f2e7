import { defineMiddleware } from '@shallot/core'
import { z } from 'zod'
import { policy, policyOptionsSchema } from './policy.js'
import { policyRuleSchema } from './rules.js'

/**
 * The policy as a config file writes it: rules as data (no `when` functions, so no `whenTimeoutMs`)
 * and no `onApproval` (a file cannot hold a callback; the run stops for approval and resumes with the answers).
 *
 * @example
 * policyFileOptionsSchema.parse({ rules: [{ action: 'deny', tools: 'delete_*', reason: 'nothing is deleted' }] })
 */
export const policyFileOptionsSchema = policyOptionsSchema.omit({ onApproval: true, rules: true, whenTimeoutMs: true }).extend({
  rules: z.array(policyRuleSchema).max(1000).default([]),
})

/**
 * `policy` as a middleware definition, for config files and registries.
 *
 * @example
 * const layer = policyDefinition.build({ rules: [{ action: 'approve', effect: 'write', reason: 'writes need a person' }] })
 */
export const policyDefinition = defineMiddleware({
  name: 'policy',
  description: 'Allow/deny rules by tool, effect, arguments and run state, and human approval before a call runs.',
  options: policyFileOptionsSchema,
  create: (options) => policy(options),
})
