export { fingerprint } from './fingerprint.js'
export {
  type LoopEntry,
  type LoopLedger,
  type LoopReason,
  resetStuckLoop,
  STATE_KEY as STUCK_LOOP_STATE_KEY,
} from './loop-ledger.js'
export { normalizeMessage } from './normalize-message.js'
export { type StuckLoopOptions, stuckLoop, stuckLoopOptionsSchema } from './stuck-loop.js'
