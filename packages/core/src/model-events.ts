import type { ModelFinishReason, ModelUsage } from './model.js'

/** Where a model's circuit is (`model.circuit` events, from a breaker layer): `closed` sends calls, `open` skips it, `half-open` lets one probe through. */
export type ModelCircuit = 'closed' | 'open' | 'half-open'

/**
 * What a model call tells while it runs: each attempt (latency, tokens, finish reason), a retry of a
 * failed call, a move to another model, a model's circuit changing. Layers hand them to
 * `ModelContext.emit`; a host passes them on to its listener (the agent's `onEvent`).
 *
 * @example
 * const onModelEvent = (e: ModelEvent) => e.type === 'model.retry' && console.warn(e.model, e.error)
 */
export type ModelEvent =
  | {
      readonly type: 'model.call'
      readonly at: number
      readonly runId: string
      readonly turn: number
      readonly model: string
      /** The adapter's `provider` (`openai.chat`, `anthropic`), when it names one. */
      readonly provider?: string
      /** 1-based, per model of the chain. */
      readonly attempt: number
      readonly durationMs: number
      /** What the provider reported; absent when it reported nothing or the attempt failed. */
      readonly usage?: ModelUsage
      readonly finishReason?: ModelFinishReason
      readonly toolCalls: number
      /** The failure, as the report would name it; absent on success. */
      readonly error?: string
      /**
       * The failure as a low-cardinality code, for dashboards: a ToolError's code (`rate_limited`,
       * `timeout`, `overloaded`, `upstream_error`, ...), a LoopError's kind, the HTTP status (`503`),
       * a Node error code (`ECONNRESET`) or the error's class name, else `_OTHER`. Absent on success.
       */
      readonly code?: string
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
