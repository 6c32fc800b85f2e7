import { createStack, defineTool, type Logger } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type IdempotencyStore, idempotency, parseStoredResult } from './index.js'
import { storedResultProblem } from './stored-result.js'

function spyLogger() {
  const warnings: Array<{ fields: Record<string, unknown>; msg: string }> = []
  const logger: Logger = {
    debug() {},
    info() {},
    error() {},
    warn: (fields: object, msg?: string) => void warnings.push({ fields: fields as Record<string, unknown>, msg: msg ?? '' }),
    child: () => logger,
  }
  return { logger, warnings }
}

/** A third-party store that trusts whatever it reads: `begin` answers `answer` as it is. */
function trustingStore(answer: unknown): IdempotencyStore {
  return {
    begin: () => answer as never,
    complete: () => true,
    release: () => true,
    markUnknown: () => true,
  }
}

const garbage: Record<string, unknown> = {
  'done with a JSON string as its result': { status: 'done', result: 'charged' },
  'done with a null result': { status: 'done', result: null },
  'done with a number as its result': { status: 'done', result: 42 },
  'done with an array as its result': { status: 'done', result: [] },
  'done with an object of the wrong shape': { status: 'done', result: { x: 1 } },
  'done with a __proto__ key': { status: 'done', result: JSON.parse('{"__proto__":{"value":1}}') },
  'done with a value that is not JSON (a function)': { status: 'done', result: { value: { run: () => 1 } } },
  'done with NaN in its value': { status: 'done', result: { value: Number.NaN } },
  'new without a token': { status: 'new' },
  'new with a number as its token': { status: 'new', token: 7 },
  'unknown with a reason nobody defined': { status: 'unknown', reason: 'later' },
  'corrupt without a problem': { status: 'unknown', reason: 'corrupt' },
  'a status nobody defined': { status: 'replayed' },
  'a string': 'charged',
  null: null,
}

describe('idempotency(): a store answer that is not well-formed is corrupt', () => {
  for (const [name, answer] of Object.entries(garbage)) {
    it(`refuses as outcome_unknown when begin answers ${name}, names the key in an event and a log line, and does not run the tool`, async () => {
      let executions = 0
      const charge = defineTool({
        name: 'charge_card',
        description: 'Charge a card',
        input: z.object({ amount: z.number() }),
        execute: () => ({ chargeId: `ch_${++executions}` }),
      })
      const { logger, warnings } = spyLogger()
      const stack = createStack({
        logger,
        tools: [charge],
        middleware: [idempotency({ store: trustingStore(answer), key: () => 'order-7' })],
      })
      const result = await stack.dispatch({ id: 'c1', name: 'charge_card', args: { amount: 5 } })
      expect(result.ok).toBe(false)
      expect(result.error).toMatchObject({ code: 'outcome_unknown', retryable: false, safeToRepeat: false })
      expect(result.content).toContain('its stored record cannot be read')
      expect(result.trace.map((e) => e.type)).toEqual(['idempotency.corrupt', 'idempotency.refused'])
      expect(result.trace[0]).toMatchObject({ key: 'order-7', problem: expect.any(String) })
      expect(warnings).toEqual([
        expect.objectContaining({ fields: expect.objectContaining({ key: 'order-7' }), msg: expect.stringContaining('corrupt') }),
      ])
      expect(executions).toBe(0)
    })
  }

  it('keeps the problem out of the model text: it is for the log', async () => {
    const stack = createStack({
      tools: [defineTool({ name: 'w', description: 'w', input: z.object({}), execute: () => 1 })],
      middleware: [idempotency({ store: trustingStore({ status: 'unknown', reason: 'corrupt', problem: 'row 17 of /srv/secret.db' }) })],
    })
    const result = await stack.dispatch({ id: 'c', name: 'w', args: {} })
    expect(result.error?.code).toBe('outcome_unknown')
    expect(JSON.stringify(result.error)).not.toContain('secret.db')
  })

  it('replays a well-formed answer from the same kind of store unchanged', async () => {
    const stack = createStack({
      tools: [defineTool({ name: 'w', description: 'w', input: z.object({}), execute: () => 1 })],
      middleware: [idempotency({ store: trustingStore({ status: 'done', result: { value: { chargeId: 'ch_1' } } }) })],
    })
    expect(await stack.dispatch({ id: 'c', name: 'w', args: {} })).toMatchObject({ ok: true, replayed: true, value: { chargeId: 'ch_1' } })
  })
})

describe('parseStoredResult', () => {
  it('accepts { value?: JSON } and nothing else', () => {
    expect(parseStoredResult('{}')).toEqual({ result: {} })
    expect(parseStoredResult('{"value":null}')).toEqual({ result: { value: null } })
    expect(parseStoredResult('{"value":{"constructor":"fine","prototype":[1]}}')).toEqual({
      result: { value: { constructor: 'fine', prototype: [1] } },
    })
    // An own __proto__ key inside the value is data (docs/decisions/380-results-keep-proto-keys.md).
    const parsed = parseStoredResult('{"value":[{"__proto__":1}]}')
    const item = 'result' in parsed ? (parsed.result.value as unknown[])[0] : undefined
    expect(item !== undefined && Object.hasOwn(item as object, '__proto__')).toBe(true)
    expect(Object.getPrototypeOf(item)).toBe(Object.prototype)
    for (const text of ['"charged"', 'null', '42', '[]', 'true', '{"x":1}', '{"value":', '', '{"__proto__":{}}']) {
      expect(parseStoredResult(text), text).toEqual({ problem: expect.any(String) })
    }
    expect(parseStoredResult(undefined)).toEqual({ problem: 'result is missing, not JSON text' })
    expect(storedResultProblem({ value: undefined })).toBeUndefined()
    expect(storedResultProblem({ value: [undefined] })).toEqual(expect.stringContaining('not JSON'))
  })

  it('never throws on 100,000 levels of nesting and keeps the stack whole', () => {
    const deep = `{"value":${'['.repeat(100_000)}${']'.repeat(100_000)}}`
    expect(parseStoredResult(deep)).toEqual({ problem: expect.stringContaining('deeper than 1000') })
    expect(storedResultProblem({ value: JSON.parse(`${'['.repeat(1000)}${']'.repeat(1000)}`) })).toBeUndefined()
  })
})
