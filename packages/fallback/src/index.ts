export type { CacheScopeFunction } from './call-cache.js'
export { fallbackDefinition, fallbackDefinition as definition } from './definition.js'
export { describeAge } from './describe-age.js'
export {
  DEFAULT_FALLBACK_CODES,
  type FallbackAnswer,
  type FallbackDispatch,
  type FallbackOptions,
  type FallbackSource,
  fallback,
  fallbackFileOptionsSchema,
  fallbackOptionsSchema,
  fallbackSourceSchema,
} from './fallback.js'
export {
  type FallbackModelOptions,
  fallbackModel,
  fallbackModelOptionsSchema,
  modelSpecSchema,
  type ResolveModel,
} from './fallback-model.js'
