import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import {
  type AnyTool,
  createRun,
  createStack,
  defineTool,
  type LayerEntry,
  LoopError,
  type Middleware,
  type ToolCall,
  ToolError,
} from '@shallot/core'
import { faultError, manualClock, scriptedModel, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  circuitBreaker,
  consecutive,
  constant,
  createAgent,
  defaultModelMiddleware,
  errorClassifier,
  type IdempotencyStore,
  idempotency,
  panicCatcher,
  rateLimit,
  retry,
  stuckLoop,
  timeout,
} from './index.js'

// docs/errors.md quotes the exact text the model reads for every soft error, and the exact message of
// every hard one. Each scenario below produces one of them through the real layers; the test fails
// when the code and the page disagree, so the page can be trusted word for word.

const errorsPage = readFileSync(fileURLToPath(new URL('../../../docs/errors.md', import.meta.url)), 'utf8')

const files = new Map([['src/main.rs', 'fn main() {}']])
const readFile = defineTool({
  name: 'read_file',
  description: 'Read a UTF-8 text file',
  input: z.object({ path: z.string() }),
  effect: 'read',
  execute: ({ path }) => {
    const text = files.get(path)
    if (text === undefined) throw new ToolError('not_found', `file ${path} not found`, { hint: 'list the directory first' })
    return text
  },
})
const writeFile = defineTool({
  name: 'write_file',
  description: 'Write a file',
  input: z.object({ path: z.string(), text: z.string() }),
  effect: 'write',
  execute: () => 'written',
})

/** A tool whose behaviour each scenario sets. */
function tool(name: string, effect: 'read' | 'write', execute: (args: Record<string, unknown>, signal: AbortSignal) => unknown) {
  return defineTool({
    name,
    description: name,
    input: z.object({}).catchall(z.unknown()),
    effect,
    execute: (args, { signal }) => execute(args, signal),
  })
}

const throws = (value: unknown) => () => {
  throw value
}

/** Dispatches calls in order on one run and returns the last result's content (the model's text). */
async function soft(
  middleware: LayerEntry<Middleware>[],
  tools: Parameters<typeof createStack>[0]['tools'],
  calls: Array<Partial<ToolCall>>,
) {
  const clock = manualClock()
  // The soft text the model reads when the stack's escalation policy lets `user`/`fatal` errors through.
  const stack = createStack({ middleware, tools, clock, random: seededRandom(1), escalate: { fatal: false, user: false } })
  const run = createRun({ id: 'run-1' })
  let content = ''
  for (const [i, call] of calls.entries()) {
    const pending = stack.dispatch({ id: `c${i}`, name: 'read_file', args: {}, ...call }, { run })
    await clock.runAll()
    content = (await pending).content
  }
  return content
}

/** Dispatches calls in order and returns the message of the LoopError that ends them. */
async function hard(
  middleware: LayerEntry<Middleware>[],
  tools: Parameters<typeof createStack>[0]['tools'],
  calls: Array<Partial<ToolCall>>,
  run = createRun({ id: 'run-1' }),
) {
  const clock = manualClock()
  const stack = createStack({ middleware, tools, clock, random: seededRandom(1) })
  for (const [i, call] of calls.entries()) {
    const pending = stack.dispatch({ id: `c${i}`, name: 'read_file', args: {}, ...call }, { run }).then(
      () => undefined,
      (err: unknown) => err,
    )
    await clock.runAll()
    const err = await pending
    if (err !== undefined) {
      if (!LoopError.is(err)) throw err
      return err.message
    }
  }
  throw new Error('no LoopError')
}

const failing = (fault: Parameters<typeof faultError>[0]) => tool('search', 'read', throws(faultError(fault, 7)))
const classified = (thrown: unknown) => soft([errorClassifier()], [tool('search', 'read', throws(thrown))], [{ name: 'search' }])

const inFlightStore: IdempotencyStore = {
  begin: () => ({ status: 'in_flight' }),
  complete: () => true,
  release: () => true,
  markUnknown: () => true,
}
const brokenStore: IdempotencyStore = {
  begin: () => {
    throw new Error('disk full')
  },
  complete: () => true,
  release: () => true,
  markUnknown: () => true,
}
const charge = tool('charge_card', 'write', (args) => ({ chargeId: `ch_${String(args.amount)}` }))
const hangingCharge = tool('charge_card', 'write', (_args, signal) => new Promise((_, reject) => signal.addEventListener('abort', reject)))

/** Each scenario: the text docs/errors.md must quote, exactly. */
const scenarios: Record<string, () => Promise<string>> = {
  unknown_tool: () => soft([], [readFile, writeFile], [{ name: 'read_fil' }]),
  'unknown_tool, no close name': () => soft([], [readFile, writeFile], [{ name: 'delete_everything' }]),
  'invalid_arguments, schema': () => soft([], [readFile], [{ args: { path: 42 } }]),
  'invalid_arguments, JSON text': () => soft([], [readFile], [{ args: '{"path": ' }]),
  'invalid_arguments, forbidden key': () => soft([], [readFile], [{ args: '{"__proto__": {"admin": true}}' }]),
  'invalid_arguments, too large': () => soft([], [readFile], [{ args: { path: 'x'.repeat(300_000) } }]),
  'invalid_arguments, too deep': () => soft([], [readFile], [{ args: JSON.parse(`${'{"a":'.repeat(40)}1${'}'.repeat(40)}`) }]),
  'not_found from the tool': () => soft([], [readFile], [{ args: { path: 'src/mian.rs' } }]),
  tool_panic: () => soft([panicCatcher(), errorClassifier()], [tool('read_file', 'read', throws(new Error('boom')))], [{}]),
  'tool_panic, redacted': () =>
    soft(
      [panicCatcher()],
      [
        tool(
          'read_file',
          'read',
          throws(new Error('GET https://billing.prod.internal/v1 as ann@example.com with Bearer Zm9vYmFyYmF6cXV4MTIzNDU2 failed')),
        ),
      ],
      [{}],
    ),
  'tool_panic, no payload': () => soft([panicCatcher()], [tool('read_file', 'read', throws(null))], [{}]),
  'tool_panic, classified TypeError': () =>
    soft([panicCatcher(), errorClassifier()], [tool('read_file', 'read', throws(faultError('crash')))], [{}]),
  'timeout, read tool': () =>
    soft(
      [timeout({ ms: 2000 })],
      [tool('search', 'read', (_a, signal) => new Promise((_, no) => signal.addEventListener('abort', no)))],
      [{ name: 'search' }],
    ),
  'timeout, write tool': () => soft([timeout({ ms: 20_000 })], [hangingCharge], [{ name: 'charge_card' }]),
  'a write whose outcome is unknown (503 without Retry-After)': () =>
    soft([errorClassifier()], [tool('charge_card', 'write', throws(faultError('server_error')))], [{ name: 'charge_card' }]),
  'a write that was not processed (503 with Retry-After)': () =>
    soft(
      [errorClassifier()],
      [tool('charge_card', 'write', throws(Object.assign(faultError('server_error') as object, { headers: { 'retry-after': '2' } })))],
      [{ name: 'charge_card' }],
    ),
  circuit_open: () =>
    soft(
      [circuitBreaker({ policy: consecutive({ threshold: 2 }), cooldownMs: 30_000 }).wrapToolCall, errorClassifier()],
      [failing('server_error')],
      [{ name: 'search' }, { name: 'search', args: { q: 'b' } }, { name: 'search', args: { q: 'c' } }],
    ),
  rate_limited: () =>
    soft(
      [rateLimit({ limit: 10, perMs: 60_000, burst: 1, maxWaitMs: 2_000 }).wrapToolCall],
      [tool('search', 'read', () => 'hits')],
      [{ name: 'search' }, { name: 'search', args: { q: 'b' } }],
    ),
  repeated_failure: () => soft([stuckLoop()], [readFile], Array(3).fill({ args: { path: 'src/mian.rs' } })),
  'repeated_failure, flailing': () => {
    let n = 0
    const flaky = tool('read_file', 'read', () => {
      n++
      throw new ToolError(n === 1 ? 'not_found' : n === 2 ? 'upstream_error' : 'permission_denied', `attempt ${n} failed`, {
        category: 'recoverable',
      })
    })
    return soft([stuckLoop()], [flaky], Array(4).fill({ args: { path: 'a.txt' } }))
  },
  repeated_call: () => soft([stuckLoop({ successRepeatLimit: 2 })], [readFile], Array(3).fill({ args: { path: 'src/main.rs' } })),
  loop_detected: () => hard([stuckLoop()], [readFile], Array(5).fill({ args: { path: 'src/mian.rs' } })),
  'outcome_unknown, recorded': () =>
    soft([idempotency(), timeout({ ms: 20_000 })], [hangingCharge], Array(2).fill({ name: 'charge_card', args: { amount: 500 } })),
  'outcome_unknown, reconciled': () =>
    soft(
      [idempotency(), timeout({ ms: 20_000 })],
      [defineTool({ ...hangingCharge, reconcile: () => ({ status: 'unknown' }) })],
      Array(2).fill({ name: 'charge_card', args: { amount: 500 } }),
    ),
  idempotency_mismatch: () =>
    soft(
      [idempotency({ keyFrom: 'orderRef' })],
      [charge],
      [
        { name: 'charge_card', args: { orderRef: 'order-42', amount: 500 } },
        { name: 'charge_card', args: { orderRef: 'order-42', amount: 900 } },
      ],
    ),
  'invalid_arguments, idempotency key': () =>
    soft([idempotency({ keyFrom: 'orderRef' })], [charge], [{ name: 'charge_card', args: { amount: 500 } }]),
  conflict: () => soft([idempotency({ store: inFlightStore })], [charge], [{ name: 'charge_card', args: { amount: 500 } }]),
  store_unavailable: () => soft([idempotency({ store: brokenStore })], [charge], [{ name: 'charge_card', args: { amount: 500 } }]),
  invalid_scope: () => soft([idempotency({ scope: () => '' })], [charge], [{ name: 'charge_card', args: { amount: 500 } }]),
  'classified 429': () => soft([errorClassifier()], [failing('rate_limit')], [{ name: 'search' }]),
  'classified 503': () => soft([errorClassifier()], [failing('server_error')], [{ name: 'search' }]),
  'classified 502': () => soft([errorClassifier()], [failing('bad_gateway')], [{ name: 'search' }]),
  'classified ECONNRESET': () => soft([errorClassifier()], [failing('connection_reset')], [{ name: 'search' }]),
  'classified ECONNREFUSED': () => soft([errorClassifier()], [failing('connection_refused')], [{ name: 'search' }]),
  'classified TimeoutError': () => soft([errorClassifier()], [failing('timeout')], [{ name: 'search' }]),
  'classified 400': () => classified(Object.assign(new Error('query must not be empty'), { status: 400 })),
  'classified 401': () => classified(Object.assign(new Error('invalid api key'), { status: 401 })),
  'classified 403': () => classified(Object.assign(new Error('Forbidden'), { status: 403 })),
  'classified 404': () => classified(Object.assign(new Error('order ORD-1 not found'), { status: 404 })),
  'classified 409': () => classified(Object.assign(new Error('version mismatch'), { status: 409 })),
  'classified 418': () => classified(Object.assign(new Error("I'm a teapot"), { status: 418 })),
  'classified AbortError': () => classified(Object.assign(new Error('This operation was aborted'), { name: 'AbortError' })),
  'classified ENOENT': () =>
    classified(Object.assign(new Error("ENOENT: no such file or directory, open 'src/mian.rs'"), { code: 'ENOENT' })),
  'classified ZodError': () => {
    const parsed = z.object({ q: z.string() }).safeParse({ q: 1 })
    return classified(parsed.error)
  },
  recovery_exhausted: () =>
    hard(
      [retry({ maxAttempts: 10, backoff: constant(0), retryBudget: false }), errorClassifier()],
      [failing('server_error')],
      [{ name: 'search' }],
    ).then((message) => message),
  'budget_exhausted, dispatcher': () => hard([], [readFile], Array(3).fill({ args: { path: 'src/main.rs' } }), createRun({ maxSteps: 2 })),
  'budget_exhausted, retry': () =>
    hard([retry({ backoff: constant(0) }), errorClassifier()], [failing('server_error')], [{ name: 'search' }], createRun({ maxSteps: 1 })),
  cancelled: () => {
    const controller = new AbortController()
    controller.abort()
    return hard([], [readFile], [{}], createRun({ signal: controller.signal }))
  },
  tool_crashed: () => hard([], [tool('read_file', 'read', throws(new RangeError('Invalid array length')))], [{}]),
  'tool_crashed, onion contract': () => {
    const broken: Middleware = async function broken(_ctx, next) {
      void next()
    }
    // A tool that answers later: a sync tool's result is already set when a layer forgets to await next().
    const slowRead = tool('read_file', 'read', async () => {
      await new Promise((resolve) => setImmediate(resolve))
      return 'fn main() {}'
    })
    return hard([broken], [slowRead], [{ args: { path: 'src/main.rs' } }])
  },
}

async function agentStop(model: Parameters<typeof createAgent>[0]['model'], tools: AnyTool[] = [readFile], limits = {}) {
  const clock = manualClock()
  const agent = createAgent({ model, tools, clock, random: seededRandom(1), limits, modelMiddleware: defaultModelMiddleware() })
  let settled = false
  const pending = agent.run({ input: 'read main', runId: 'run-1' }).finally(() => {
    settled = true
  })
  while (!settled) await clock.runAll()
  const outcome = await pending
  if (outcome.status !== 'stopped') throw new Error('the run completed')
  return outcome.error.message
}

const agentScenarios: Record<string, () => Promise<string>> = {
  fatal: () =>
    agentStop(scriptedModel([{ toolCalls: [{ name: 'search', args: {} }] }]), [
      tool('search', 'read', throws(new ToolError('permission_denied', 'this account may not read /etc'))),
    ]),
  user_input_required: () =>
    agentStop(scriptedModel([{ toolCalls: [{ name: 'search', args: {} }] }]), [
      tool('search', 'read', throws(new ToolError('auth_required', 'the GitHub token expired'))),
    ]),
  model_failed: () =>
    agentStop({
      generate: async () => {
        throw Object.assign(new Error('overloaded'), { status: 529 })
      },
    }),
  'budget_exhausted, turns': () =>
    agentStop(scriptedModel([{ toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] }], { onEnd: 'repeat' }), [readFile], {
      maxTurns: 3,
    }),
}

describe('docs/errors.md quotes the exact text', () => {
  for (const [name, produce] of Object.entries({ ...scenarios, ...agentScenarios })) {
    it(`${name}`, async () => {
      const text = await produce()
      if (process.env.SHALLOT_PRINT_ERRORS) console.log(`${name}\n${text}\n`)
      expect(errorsPage.includes(text), `docs/errors.md does not contain:\n${text}`).toBe(true)
    })
  }
})
