import type { ScriptStep } from '@shallot/testing'

const failed = (results: ReadonlyArray<{ ok: boolean }>) => results.some((r) => !r.ok)

/**
 * The scripted model of the demo. Each step is what a reasonable model would do after reading the
 * previous results, including the last, unreasonable one: asking for the same missing log forever.
 */
export const story: ScriptStep[] = [
  // 1. A typo: the soft not_found tells the model which files exist.
  { text: 'Let me look at the entry point.', toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
  ({ lastResults }) =>
    failed(lastResults)
      ? { text: 'Typo; the error lists src/main.rs.', toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] }
      : { text: 'odd, that worked' },
  // 2. A flaky read: retried with jitter by the stack, the model never sees the 503s.
  { text: 'How should refunds be issued?', toolCalls: [{ name: 'search_docs', args: { query: 'refund policy' } }] },
  // 3. A refund that lands, then times out: not repeated by retry; idempotency asks the provider's lookup,
  // learns it landed, and the model reads the refund as done.
  { text: 'Refund the order.', toolCalls: [{ name: 'charge_card', args: { order: 'ORD-2026-00042', amountCents: -4200 } }] },
  // 4. A dead dependency: two timeouts open its circuit, and the model routes around it.
  ({ lastResults }) => ({
    text: failed(lastResults) ? 'Is the payment provider healthy?' : 'The refund went through. Is the payment provider healthy?',
    toolCalls: [{ name: 'status_page', args: { service: 'payments' } }],
  }),
  { text: 'Try the provider-wide page.', toolCalls: [{ name: 'status_page', args: { service: 'payments-eu' } }] },
  ({ tools }) =>
    tools.find((t) => t.name === 'status_page')?.note
      ? { text: 'status_page is marked unavailable; use the cache.', toolCalls: [{ name: 'status_cache', args: { service: 'payments' } }] }
      : { text: 'One more try.', toolCalls: [{ name: 'status_page', args: { service: 'payments' } }] },
  // 5. A loop: the model insists on a log that does not exist. Refused, then stopped.
  { text: 'I need the build log.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'Read it again.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'And again.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'Again.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'Again.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'Again.', toolCalls: [{ name: 'read_file', args: { path: 'logs/build.log' } }] },
  { text: 'The refund is done.' },
]
