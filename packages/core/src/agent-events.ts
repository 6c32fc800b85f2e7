import type { ModelCircuit } from './model-breaker.js'
import type { Logger } from './types.js'

/**
 * What the agent did about its model calls, for timelines and metrics (`createAgent({ onEvent })`):
 * a retry of a failed call, a move to the next model of the chain, a model's circuit changing.
 *
 * @example
 * createAgent({ model: [gpt, claude], tools, onEvent: (e) => e.type === 'model.fallback' && console.warn(e.reason) })
 */
export type AgentEvent =
  | {
      readonly type: 'model.retry'
      readonly at: number
      readonly runId: string
      readonly turn: number
      readonly model: string
      /** The attempt that failed, 1-based. */
      readonly attempt: number
      readonly delayMs: number
      /** The failure, as the report would name it ("429 rate limited by the provider, Retry-After 2 s"). */
      readonly error: string
    }
  | {
      readonly type: 'model.fallback'
      readonly at: number
      readonly runId: string
      readonly turn: number
      readonly from: string
      readonly to: string
      readonly reason: string
    }
  | {
      readonly type: 'model.circuit'
      readonly at: number
      readonly runId: string
      readonly model: string
      readonly from: ModelCircuit
      readonly to: ModelCircuit
      readonly reason: string
    }

export type AgentEventSink = (event: AgentEvent) => void

/** The sink of one agent: its `onEvent` listener, which never changes a run if it throws (logged once). */
export function agentEvents(logger: Logger, listener: AgentEventSink | undefined): AgentEventSink {
  if (listener === undefined) return () => {}
  let failed = false
  return (event) => {
    try {
      listener(event)
    } catch (err) {
      if (failed) return
      failed = true
      logger.error({ err, event: event.type }, 'the agent onEvent listener threw; the run goes on, and its later throws are not logged')
    }
  }
}
