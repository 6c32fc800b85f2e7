export { type ClassifyCallOptions, classify, tryClassify } from './classify.js'
export { type Classifier, type ClassifyOptions, classifyOptionsSchema, createClassifier } from './create-classifier.js'
export { describeError } from './describe-error.js'
export { type ErrorClassifierOptions, errorClassifier, errorClassifierOptionsSchema } from './error-classifier.js'
export { type ErrorFacts, errorFacts, type HeaderSource, headerOf } from './error-facts.js'
export { matchRule, type RuleMatcher } from './match-rule.js'
export { parseRetryAfter, parseRetryAfterMs, type RetryAfterOptions } from './retry-after.js'
export {
  builtinRules,
  type ClassifierRule,
  classifierMatchSchema,
  classifierOutcomeSchema,
  classifierRuleSchema,
  classifierRulesSchema,
} from './rules.js'
