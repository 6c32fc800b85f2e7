import { bulkhead } from '@shallot/bulkhead'
import { fallback } from '@shallot/fallback'
import { hedging } from '@shallot/hedging'
import { bulkhead as cockatielBulkhead, fallback as cockatielFallback, handleAll } from 'cockatiel'
import { distinctCall, readTool, stackOf } from './fixtures.js'
import type { Case } from './measure.js'
import { work } from './peers.js'

/** 9: the bulkhead, fallback and hedging layers alone on the happy path, beside cockatiel's bulkhead and fallback. */
export function resilienceCases(): Case[] {
  const peerBulkhead = cockatielBulkhead(10, 10)
  const peerFallback = cockatielFallback(handleAll, 0)
  const layers = {
    bulkhead: [bulkhead({ limit: 10, queue: 10 })],
    'fallback (no source for the tool)': [fallback({ tools: { other_tool: { from: 'cache' } } })],
    'fallback (caching every result)': [fallback({ default: { from: 'cache' } })],
    'fallback (fixed value)': [fallback({ default: { from: 'value', value: 0 } })],
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
