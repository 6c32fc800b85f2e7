import {
  createRun,
  createStack,
  defineTool,
  type LayerEntry,
  LoopError,
  type Middleware,
  type ToolCall,
  ToolError,
  type ToolResult,
} from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { circuitBreaker, consecutive, defaultMiddleware, idempotency, panicCatcher, stuckLoop, timeout } from './index.js'

// The product's promise: nothing the model reads carries a secret, whichever layer wrote the text.
// Each entry is text a tool might throw, and the part of it that must never reach the model.
const corpus: [kind: string, text: string, secret: string][] = [
  ['an OpenAI key', 'key sk-proj-Q2x9LmN4vB7kR1tY6uW3zA8c', 'Q2x9LmN4vB7kR1tY6uW3zA8c'],
  ['an Anthropic key', 'key sk-ant-api03-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk', 'Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk'],
  ['an AWS access key id', 'as AKIAIOSFODNN7EXAMPLE', 'IOSFODNN7EXAMPLE'],
  ['a GitHub token', 'token ghp_0123456789abcdefghijABCDEFGHIJ', '0123456789abcdefghij'],
  ['a fine-grained GitHub token', 'token github_pat_11ABCDEFG0123456789_abcdefghijklmnop', '11ABCDEFG0123456789'],
  ['a Slack token', 'token xoxb-123456789012-abcdefghijKLMN', '123456789012-abcdefghijKLMN'],
  ['a JWT', 'session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.sflKxwRJSMeKKF2QT4fwpM', 'eyJzdWIiOiJhbm4ifQ'],
  ['a Bearer header', 'sent Authorization: Bearer Zm9vYmFyYmF6cXV4MTIzNDU2', 'Zm9vYmFyYmF6cXV4MTIzNDU2'],
  ['a Basic header', 'sent Authorization: Basic YWxpY2U6aHVudGVyMg==', 'YWxpY2U6aHVudGVyMg'],
  ['a bare Bearer token', 'with Bearer dG9rZW4tdGhhdC1pcy1sb25n', 'dG9rZW4tdGhhdC1pcy1sb25n'],
  ['a password in a URL', 'at postgres://app:hunter2pass@db.example.com/orders', 'hunter2pass'],
  ['a private IPv4 address', 'connect ECONNREFUSED 10.12.4.7:5432', '10.12.4.7'],
  ['a 192.168 address', 'via 192.168.7.20', '192.168.7.20'],
  ['an internal host', 'getaddrinfo ENOTFOUND billing.prod.internal', 'billing.prod'],
  ['a Linux home path', "open '/home/zoltan-k/.aws/credentials'", 'zoltan-k'],
  ['a macOS home path', 'at /Users/bjorn/dev/app.ts:3:1', 'bjorn'],
  ['an e-mail address', 'owner ann.lee@example.com', 'ann.lee'],
]

/** Every piece of model-facing text a result carries. */
function modelText(result: ToolResult): string {
  return `${result.content}\n${JSON.stringify(result.error ?? {})}`
}

function expectClean(result: ToolResult, secret: string) {
  expect(result.ok).toBe(false)
  const text = modelText(result)
  expect(text).not.toContain(secret)
  // The text was redacted, not dropped: a cap or an empty message would pass the check above for nothing.
  expect(text).toContain('[redacted]')
}

const throwing = (name: string, thrown: () => unknown, effect: 'read' | 'write' = 'read') =>
  defineTool({
    name,
    description: name,
    input: z.object({}).catchall(z.unknown()),
    effect,
    execute: () => {
      throw thrown()
    },
  })

const shapes: [shape: string, make: (text: string) => unknown][] = [
  ['a plain Error', (text) => new Error(`request failed: ${text}`)],
  ['a string', (text) => `request failed: ${text}`],
  ['an object with message', (text) => ({ message: `request failed: ${text}` })],
  ['an Error with an unrecognised code', (text) => Object.assign(new Error(`request failed: ${text}`), { code: 'E_ACME_WEIRD' })],
  ['an HTTP error the classifier maps', (text) => Object.assign(new Error(`request failed: ${text}`), { status: 502 })],
]

describe('no secret reaches the model through defaultMiddleware()', () => {
  const cases = shapes.flatMap(([shape, make]) => corpus.map(([kind, text, secret]) => [shape, kind, make, text, secret] as const))
  it.each(cases)('%s carrying %s', async (_shape, _kind, make, text, secret) => {
    const stack = createStack({ middleware: defaultMiddleware(), tools: [throwing('fetch_report', () => make(text))] })
    expectClean(await stack.dispatch({ id: 'c1', name: 'fetch_report', args: {} }), secret)
  })
})

/** Dispatches calls in order on one run and returns the last result. */
async function lastOf(
  middleware: LayerEntry<Middleware>[],
  tools: Parameters<typeof createStack>[0]['tools'],
  calls: Partial<ToolCall>[],
  secrets?: (string | RegExp)[],
) {
  const clock = manualClock()
  const stack = createStack({ middleware, tools, clock, random: seededRandom(1), ...(secrets === undefined ? {} : { secrets }) })
  const run = createRun({ id: 'run-1' })
  let result: ToolResult | undefined
  for (const [i, call] of calls.entries()) {
    const pending = stack.dispatch({ id: `c${i}`, name: 'fetch_report', args: {}, ...call }, { run })
    await clock.runAll()
    result = await pending
  }
  if (result === undefined) throw new Error('no calls')
  return result
}

// A key or breaker key is one word: a header's value is only a secret next to its header, so those stay out.
const noSpaces = corpus.filter(([kind]) => !/Bearer|Basic/.test(kind))

describe('no secret reaches the model through any layer that writes text', () => {
  it.each(corpus)('the panic catcher, given %s', async (_kind, text, secret) => {
    const result = await lastOf([panicCatcher()], [throwing('fetch_report', () => new Error(text))], [{}])
    expect(result.error?.code).toBe('tool_panic')
    expectClean(result, secret)
  })

  it.each(corpus)("stuck-loop's refusal, quoting the last error with %s", async (_kind, text, secret) => {
    // No classifier in this stack: the refusal quotes the tool's own ToolError, as the tool wrote it.
    const tool = throwing('fetch_report', () => new ToolError('upstream_error', `report failed: ${text}`, { retryable: false }))
    const result = await lastOf([stuckLoop({ refuseAfter: 2 })], [tool], Array(3).fill({ args: { id: 1 } }))
    expect(result.error?.code).toBe('repeated_failure')
    expectClean(result, secret)
  })

  it.each(corpus)("stuck-loop's hard stop and its checkpointed state, after failures carrying %s", async (_kind, text, secret) => {
    const tool = throwing('fetch_report', () => new ToolError('upstream_error', `report failed: ${text}`, { retryable: false }))
    const stack = createStack({ middleware: [stuckLoop({ refuseAfter: 2, stopAfter: 3 })], tools: [tool] })
    const run = createRun({ id: 'run-1' })
    const outcomes: unknown[] = []
    for (const id of ['c1', 'c2', 'c3'])
      outcomes.push(await stack.dispatch({ id, name: 'fetch_report', args: { id: 1 } }, { run }).catch((err: unknown) => err))
    const stop = outcomes.at(-1)
    expect(LoopError.is(stop) && stop.kind).toBe('loop_detected')
    expect(JSON.stringify({ message: (stop as LoopError).message, details: (stop as LoopError).details })).not.toContain(secret)
    expect(JSON.stringify(run.state)).not.toContain(secret)
    expect(JSON.stringify(run.state)).toContain('[redacted]')
  })

  it.each(noSpaces)("idempotency's refusal, naming a key that is %s", async (_kind, _text, secret) => {
    const charge = defineTool({
      name: 'fetch_report',
      description: 'charge',
      input: z.object({ ref: z.string(), amount: z.number() }),
      effect: 'write',
      execute: () => 'charged',
    })
    const ref =
      corpus
        .find(([, , s]) => s === secret)?.[1]
        .split(' ')
        .at(-1) ?? ''
    const result = await lastOf([idempotency({ keyFrom: 'ref' })], [charge], [{ args: { ref, amount: 1 } }, { args: { ref, amount: 2 } }])
    expect(result.error?.code).toBe('idempotency_mismatch')
    expectClean(result, secret)
  })

  it.each(noSpaces)("the breaker's circuit_open refusal, naming a breaker key that is %s", async (_kind, text, secret) => {
    const key = text.split(' ').at(-1) ?? ''
    const failing = throwing('fetch_report', () => new ToolError('upstream_error', 'HTTP 503', { category: 'transient', retryable: false }))
    const result = await lastOf(
      [circuitBreaker({ policy: consecutive({ threshold: 2 }), cooldownMs: 30_000, key: () => key }).wrapToolCall],
      [failing],
      [{ args: { q: 'a' } }, { args: { q: 'b' } }, { args: { q: 'c' } }],
    )
    expect(result.error?.code).toBe('circuit_open')
    expectClean(result, secret)
  })

  it("the timeout's text, with a user secret literal and pattern", async () => {
    const hanging = defineTool({
      name: 'ledger_7f3a9c',
      description: 'hangs',
      input: z.object({}),
      effect: 'write',
      execute: (_args, { signal }) => new Promise((_, reject) => signal.addEventListener('abort', reject)),
    })
    const literal = await lastOf([timeout({ ms: 1000 })], [hanging], [{ name: 'ledger_7f3a9c' }], ['ledger_7f3a9c'])
    expect(literal.error?.code).toBe('timeout')
    expectClean(literal, 'ledger_7f3a9c')
    const pattern = await lastOf([timeout({ ms: 1000 })], [hanging], [{ name: 'ledger_7f3a9c' }], [/ledger_[0-9a-f]{6}/])
    expectClean(pattern, 'ledger_7f3a9c')
    // The hint is the timeout layer's own text, and a pattern applies to it as well.
    const hint = await lastOf([timeout({ ms: 1000 })], [hanging], [{ name: 'ledger_7f3a9c' }], [/do not repeat this call/])
    expect(hint.error?.hint).toContain('[redacted]')
  })

  it('the error classifier’s own secrets, in text the panic catcher wrote', async () => {
    // A plain Error passes the classifier unrecognised, and the panic catcher outside writes the text:
    // the classifier's secrets still apply, because it declares them to the stack.
    const stack = createStack({
      middleware: defaultMiddleware({ errorClassifier: { secrets: ['tenant-9f31c'] } }),
      tools: [throwing('fetch_report', () => new Error('no such tenant tenant-9f31c'))],
    })
    const result = await stack.dispatch({ id: 'c1', name: 'fetch_report', args: {} })
    expect(result.error?.code).toBe('tool_panic')
    expectClean(result, 'tenant-9f31c')
  })
})
