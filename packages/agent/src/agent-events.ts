import type { Logger, ModelEvent } from '@shallot/core'
import { callListener } from '@shallot/core/kit'
import type { AgentLimits } from './agent-limits.js'
import type { RunUsage } from './usage-budget.js'

/**
 * What the agent did, for traces, timelines and metrics (`createAgent({ onEvent })`): a run starting
 * and finishing (with its token totals), each model attempt (latency, tokens, finish reason), a
 * retry of a failed call, a move to a spare model (the fallback layer), a model's circuit changing.
 * Tool calls are on the stack's stream (`agent.stack.on`, `call.started` / `call.finished`).
 *
 * @example
 * createAgent({ model: gpt, modelMiddleware: [fallback({ models: [claude] })], tools, onEvent: (e) => e.type === 'model.fallback' && console.warn(e.reason) })
 * createAgent({ model, tools, onEvent: (e) => e.type === 'run.finished' && bill(e.runId, e.usage.inputTokens) })
 */

export type AgentEvent =
  | {
      readonly type: 'run.started'
      readonly at: number
      readonly runId: string
      /** The last completed turn: 0 for a new run, and for a run resumed before its first turn completed. */
      readonly turn: number
      /** Whether the run continues from a checkpoint (any resume, a first turn's park or stop included); false for a new run. */
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
  | ModelEvent

export type AgentEventSink = (event: AgentEvent) => void

/** The sink of an agent nobody listens to: the loop checks for it and builds no event at all. */
export const noAgentEvents: AgentEventSink = () => {}
/**
 * What an `onEvent` listener's `within` runs: a whole run, or one model attempt.
 *
 * @example
 * const within = <T>(scope: AgentScope, fn: () => T): T => (scope.type === 'run' ? store.run(scope.runId, fn) : fn())
 */
export type AgentScope =
  | { readonly type: 'run'; readonly at: number; readonly runId: string }
  | {
      readonly type: 'model.call'
      readonly at: number
      readonly runId: string
      readonly turn: number
      readonly model: string
      readonly provider?: string
      readonly attempt: number
    }

/**
 * `createAgent({ onEvent })`: called with each event; when it has a `within`, each run (before its
 * `run.started`) and each model attempt (before its `model.call`) runs inside it, so what they start
 * (a tool's or a model SDK's own spans, an AsyncLocalStorage store) sees the listener's context.
 * `within` calls `fn` once and returns what it returns; a `within` that throws or never calls `fn`
 * costs its context, never the run.
 *
 * @example
 * const store = new AsyncLocalStorage<string>()
 * const onEvent = Object.assign((e: AgentEvent) => console.log(e.type), {
 *   within: <T>(scope: AgentScope, fn: () => T) => store.run(scope.runId, fn),
 * })
 */
export interface AgentEventListener {
  (event: AgentEvent): void
  within?: <T>(scope: AgentScope, fn: () => T) => T
}

/** Runs `fn` inside a listener's `within`, or as is. */
export type AgentScopeRunner = <T>(scope: AgentScope, fn: () => T) => T

/** The runner of a listener without `within` (or of no listener): callers skip building a scope for it. */
export const noScope: AgentScopeRunner = (_scope, fn) => fn()

/**
 * The listener's `within`, guarded: `fn` runs exactly once whatever `within` does (throws, never
 * calls it, calls it twice), and the run gets `fn`'s own result. A throw is logged once.
 */
export function agentScope(logger: Logger, listener: AgentEventListener | undefined): AgentScopeRunner {
  const within = listener?.within
  if (typeof within !== 'function') return noScope
  let failed = false
  return <T>(scope: AgentScope, fn: () => T): T => {
    let ran = false
    let result: { value: T } | { error: unknown } | undefined
    const once = (): T => {
      if (!ran) {
        ran = true
        try {
          result = { value: fn() }
        } catch (error) {
          result = { error }
        }
      }
      if (result !== undefined && 'error' in result) throw result.error
      return (result as { value: T }).value
    }
    try {
      within.call(listener, scope, once)
    } catch (err) {
      const fnsOwn = result !== undefined && 'error' in result && result.error === err
      if (!fnsOwn && !failed) {
        failed = true
        logger.error({ err, scope: scope.type }, "the agent onEvent listener's within threw; the run goes on without its context")
      }
    }
    return once()
  }
}

/** The sink of one agent: its `onEvent` listener, which never changes a run if it throws (logged once). */
export function agentEvents(logger: Logger, listener: AgentEventSink | undefined): AgentEventSink {
  if (listener === undefined) return noAgentEvents
  let failed = false
  const threw = (err: unknown, type: AgentEvent['type']) => {
    if (failed) return
    failed = true
    logger.error({ err, event: type }, 'the agent onEvent listener threw; the run goes on, and its later throws are not logged')
  }
  // An async listener (writing events to a database) rejects instead of throwing: logged the same way.
  return (event) => callListener(listener, event, (err) => threw(err, event.type))
}
