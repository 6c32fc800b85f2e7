export { hedgingDefinition, hedgingDefinition as definition } from './definition.js'
export { type HedgingOptions, hedging, hedgingFileOptionsSchema, hedgingOptionsSchema } from './hedging.js'
export { type HedgeBudgetStore, isHedgeBudgetStore } from './token-bucket.js'
