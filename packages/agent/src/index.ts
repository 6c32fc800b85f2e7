export {
  type Agent,
  type AgentEvent,
  type AgentEventListener,
  type AgentLimits,
  type AgentOptions,
  type AgentScope,
  createAgent,
  ParkedError,
  type ParkedOutcome,
  type ParkingOutcome,
  type ResumeOptions,
  type RunOutcome,
} from './agent.js'
export {
  type CallRecord,
  type CheckpointStore,
  memoryCheckpoints,
  type ParkReason,
  type ParkRecord,
  type PendingTurn,
  ResumeError,
  type RunSnapshot,
  type SettledCall,
  type TurnRecord,
} from './checkpoints.js'
export { type HostedModelCall, type ModelAttempt, type ModelCallHost, type ModelCallHostOptions, modelCallHost } from './model-call-host.js'
export type { ModelPrice } from './model-link.js'
export { buildReport, type PendingCall, type RunReport } from './report.js'
export type { RunUsage } from './usage-budget.js'
