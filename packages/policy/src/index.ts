// Core's writer of an answer bound to its call: what a host without an agent hands the policy.
export { putApproval } from '@shallot/core/kit'
export {
  type ApprovalDecision,
  type ApprovalRequest,
  approvalDecisionSchema,
  type OnApproval,
} from './approval.js'
export { policyDefinition as definition, policyDefinition, policyFileOptionsSchema } from './definition.js'
export { type PolicyOptions, policy, policyOptionsSchema } from './policy.js'
export { approvalRequired, approvalUsed, blockedByPolicy, deniedByUser, type PendingApproval } from './policy-errors.js'
export { POLICY_STATE_KEY } from './policy-state.js'
export { type ArgPredicate, argPredicateSchema } from './predicates.js'
export { type PolicyAction, type PolicyCheck, type PolicyRule, policyCodeRuleSchema, policyRuleSchema } from './rules.js'
