import { bulkhead } from '@shallot/bulkhead'
import { createRun, type Middleware, type ToolResult } from '@shallot/core'
import { fallback } from '@shallot/fallback'
import { hedging } from '@shallot/hedging'
import { bulkhead as cockatielBulkhead, fallback as cockatielFallback, handleAll } from 'cockatiel'
import { circuitBreaker, constant, rateLimit, retry, stuckLoop } from 'shallot'
import { distinctCall, flakyTool, readTool, stackOf } from './fixtures.js'
import type { Case } from './measure.js'
import { work } from './peers.js'

/**
 * 9: the bulkhead, rate-limit, fallback and hedging layers alone on the happy path, beside cockatiel's bulkhead and
 * fallback. Cockatiel has no rate limiter: the rate-limit row's cost is read against the stack with no layers (scenario 4).
 */
export function resilienceCases(): Case[] {
  const peerBulkhead = cockatielBulkhead(10, 10)
  const peerFallback = cockatielFallback(handleAll, 0)
  const layers = {
    bulkhead: [bulkhead({ maxConcurrent: 10, maxQueue: 10 })],
    // Never over the limit: the path every admitted call takes (one GCRA step in memory, no timer).
    'rate-limit (under the limit)': [rateLimit({ limit: 1_000_000, perMs: 1 }).wrapToolCall],
    'fallback (no source for the tool)': [fallback({ tools: { other_tool: { from: 'cache' } } }).wrapToolCall],
    'fallback (caching every result)': [fallback({ default: { from: 'cache' } }).wrapToolCall],
    'fallback (fixed value)': [fallback({ default: { from: 'value', value: 0 } }).wrapToolCall],
    'hedging (answers before the delay)': [hedging({ delayMs: 1000 })],
  }
  const cases: Case[] = [
    { name: 'cockatiel bulkhead(10, 10)', fn: () => peerBulkhead.execute(() => work(1)) },
    { name: 'cockatiel fallback', fn: () => peerFallback.execute(() => work(1)) },
  ]
  for (const [name, middleware] of Object.entries(layers)) {
    const stack = stackOf(middleware, [readTool])
    cases.push({ name: `shallot: ${name}`, fn: () => stack.dispatch(distinctCall(readTool.name)) })
  }
  return cases
}

/**
 * 9 (continued): the options added to existing layers. Half-open sampling and retry hooks on the
 * paths every call takes (a closed circuit, a success), beside the same layer without them; a retry
 * hook on the failure path; convergence's work per turn, a 2 KB turn and a 1 MB one (capped).
 */
export function resilienceOptionCases(): Case[] {
  const cases: Case[] = []
  const happy: Record<string, Middleware[]> = {
    'circuit-breaker (closed)': [circuitBreaker().wrapToolCall],
    'circuit-breaker halfOpenSuccesses 3 of 5 (closed)': [circuitBreaker({ halfOpenProbes: 5, halfOpenSuccesses: 3 }).wrapToolCall],
    'retry (success)': [retry().wrapToolCall],
    'retry onRetry + onGiveUp (success)': [retry({ onRetry: () => undefined, onGiveUp: () => {} }).wrapToolCall],
  }
  for (const [name, middleware] of Object.entries(happy)) {
    const stack = stackOf(middleware, [readTool])
    cases.push({ name: `shallot: ${name}`, fn: () => stack.dispatch(distinctCall(readTool.name)) })
  }
  const failing: Record<string, Middleware[]> = {
    'retry, one failure': [retry({ backoff: constant(0), retryBudget: false }).wrapToolCall],
    'retry onRetry { delayMs: 0 }, one failure': [
      retry({ backoff: constant(0), retryBudget: false, onRetry: async () => ({ delayMs: 0 }) }).wrapToolCall,
    ],
  }
  for (const [name, middleware] of Object.entries(failing)) {
    const tool = flakyTool()
    const stack = stackOf(middleware, [tool])
    cases.push({ name: `shallot: ${name}`, fn: () => stack.dispatch(distinctCall(tool.name)) })
  }
  const observe = stuckLoop({ convergence: {} }).observeTurn
  if (observe === undefined) throw new Error('stuckLoop({ convergence }) has no observeTurn')
  const env = { log: { warn() {} } as never, emit() {} }
  const turnOf = (chars: number) => {
    const text = 'The deployment is still running at 45%, so I will check the status again. '.repeat(Math.ceil(chars / 76)).slice(0, chars)
    const call = { id: 'c1', name: 'deploy_status', args: { service: 'api' } }
    const result: ToolResult = {
      callId: 'c1',
      name: 'deploy_status',
      ok: true,
      content: text,
      attempts: 1,
      durationMs: 0,
      replayed: false,
      trace: [],
    }
    let turn = 0
    // A fresh run every 2 turns keeps the count below `after`, so every measured turn is compared and none stops.
    let run = createRun()
    return () => {
      if (turn % 2 === 0) run = createRun()
      observe({ turn: ++turn, text, calls: [call], results: [result] }, run, env)
    }
  }
  cases.push({ name: 'shallot: stuck-loop convergence, one 2 KB turn', fn: turnOf(2000) })
  cases.push({ name: 'shallot: stuck-loop convergence, one 1 MB turn (capped)', fn: turnOf(1_000_000) })
  return cases
}
