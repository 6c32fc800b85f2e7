export { type BuiltLayers, buildLayers, type LayerCache } from './build-layers.js'
export {
  builtinMiddleware,
  circuitBreakerFileOptionsSchema,
  errorClassifierFileOptionsSchema,
  idempotencyFileOptionsSchema,
  panicCatcherFileOptionsSchema,
} from './builtins.js'
export { type CheckConfigOptions, type ConfigCheck, checkConfig } from './check-config.js'
export { ConfigError, type ConfigIssue, displayFile } from './config-error.js'
export { configJsonSchema, configJsonSchemaText, editorSchema } from './config-json-schema.js'
export { type ConfigDocument, type ConfigInput, configSchema, MIDDLEWARE_NAME, OFF, type SlotValue } from './config-schema.js'
export { type ConfigSource, formatPath, objectSource, type ParseSourceOptions, type PathKey, parseSource } from './config-source.js'
export { type ConfigStores, createStores } from './config-stores.js'
export { type ConfigStack, type ConfigStackOptions, createStackFromConfig } from './create-stack-from-config.js'
export { configFromSource, isShallotConfig, type LoadConfigOptions, loadConfig, readConfigText, type ShallotConfig } from './load-config.js'
export { loadMiddleware, MiddlewareLoadError } from './load-middleware.js'
export { perTool } from './per-tool.js'
export type { LayerPlan, LayerVariant } from './plan-layers.js'
export { resolvePackage } from './resolve-package.js'
export { toolEffects } from './tool-effects.js'
export { type WatchConfigOptions, watchConfig } from './watch-config.js'
