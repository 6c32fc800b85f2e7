export type { CacheScopeFunction } from './call-cache.js'
export { fallbackDefinition, fallbackDefinition as definition } from './definition.js'
export { describeAge } from './describe-age.js'
export { type FallbackLayer, fallback } from './fallback.js'
export {
  DEFAULT_FALLBACK_CODES,
  type FallbackDispatch,
  type FallbackOptions,
  type FallbackSource,
  fallbackFileOptionsSchema,
  fallbackOptionsSchema,
  fallbackSourceSchema,
} from './fallback-options.js'
export { modelSpecSchema, type ResolveModel } from './model-fallback.js'
export type { FallbackAnswer } from './tool-fallback.js'
