export { CONVERGENCE_STATE_KEY, type ConvergenceOptions, resetConvergence } from './convergence.js'
export { stuckLoopDefinition } from './definition.js'
export { type LoopReason, resetStuckLoop } from './loop-ledger.js'
export { type StuckLoopOptions, stuckLoop } from './stuck-loop.js'
