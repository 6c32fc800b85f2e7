export { type CliIO, main } from './cli.js'
export { type DemoOptions, runDemo } from './demo/run-demo.js'
export { escapeHtml, renderHtml } from './report/html.js'
export {
  MAX_RECORD_BYTES,
  parseRecord,
  RecordError,
  type RecordedCall,
  type RecordedEvent,
  type RecordedTurn,
  type RunRecord,
  readRecord,
} from './report/record.js'
export { type RunRecorder, recordRun } from './report/record-run.js'
export { HANDOFF_LIMITS, type HandoffOptions, handoffOf } from './run/handoff.js'
export { shellQuote } from './run/shell-quote.js'
export type { StatusStream } from './run/waits.js'
export { type HerdBackoff, type HerdOptions, type HerdResult, herd } from './sim/herd.js'
export { type OutageOptions, type OutageResult, type OutageRetry, outage } from './sim/outage.js'
export { plotSvg, type Series } from './sim/plot.js'
export { type SimOptions, type SimResult, type StackEnv, simulate } from './sim/simulate.js'
