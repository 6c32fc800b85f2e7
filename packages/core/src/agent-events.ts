import type { AgentLimits } from './agent-options.js'
import type { ModelFinishReason, ModelUsage } from './model.js'
import type { ModelCircuit } from './model-breaker.js'
import type { Logger } from './types.js'
import type { RunUsage } from './usage-budget.js'

/**
 * What the agent did, for traces, timelines and metrics (`createAgent({ onEvent })`): a run starting
 * and finishing (with its token totals), each model attempt (latency, tokens, finish reason), a
 * retry of a failed call, a move to the next model of the chain, a model's circuit changing.
 * Tool calls are on the stack's stream (`agent.stack.on`, `call.started` / `call.finished`).
 *
 * @example
 * createAgent({ model: [gpt, claude], tools, onEvent: (e) => e.type === 'model.fallback' && console.warn(e.reason) })
 * createAgent({ model, tools, onEvent: (e) => e.type === 'run.finished' && bill(e.runId, e.usage.inputTokens) })
 */
export type AgentEvent =
  | {
      readonly type: 'run.started'
      readonly at: number
      readonly runId: string
      /** The last completed turn: 0 for a new run, more for a resumed one. */
      readonly turn: number
      /** Whether the run continues from a checkpoint. */
      readonly resumed: boolean
      readonly limits: Readonly<AgentLimits>
    }
  | {
      readonly type: 'run.finished'
      readonly at: number
      readonly runId: string
      readonly status: 'completed' | 'stopped' | 'parked'
      /** The LoopError's kind when the run stopped. */
      readonly kind?: string
      readonly turns: number
      readonly steps: number
      /** The run's totals, resumed runs included. */
      readonly usage: RunUsage
      readonly durationMs: number
    }
  | {
      readonly type: 'model.call'
      readonly at: number
      readonly runId: string
      readonly turn: number
      readonly model: string
      /** 1-based, per model of the chain. */
      readonly attempt: number
      readonly durationMs: number
      /** What the provider reported; absent when it reported nothing or the attempt failed. */
      readonly usage?: ModelUsage
      readonly finishReason?: ModelFinishReason
      readonly toolCalls: number
      /** The failure, as the report would name it; absent on success. */
      readonly error?: string
    }
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
