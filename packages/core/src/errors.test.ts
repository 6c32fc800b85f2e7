import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { createStack, defineTool, LoopError, ToolError } from './index.js'

/** A second, separately evaluated copy of the package: what two installed versions look like at run time. */
async function secondCopy() {
  vi.resetModules()
  const copy = await import('./index.js')
  expect(copy.ToolError).not.toBe(ToolError)
  expect(copy.LoopError).not.toBe(LoopError)
  return copy
}

describe('ToolError and LoopError across two copies of the package', () => {
  it('recognises errors from the other copy both ways, though instanceof does not', async () => {
    const copy = await secondCopy()
    const foreignTool = new copy.ToolError('timeout', 'took too long')
    const foreignLoop = new copy.LoopError('cancelled', 'the run was cancelled')
    expect(foreignTool instanceof ToolError).toBe(false)
    expect(ToolError.is(foreignTool)).toBe(true)
    expect(LoopError.is(foreignLoop)).toBe(true)
    expect(copy.ToolError.is(new ToolError('timeout', 'x'))).toBe(true)
    expect(copy.LoopError.is(new LoopError('fatal', 'x'))).toBe(true)
  })

  it('keeps a ToolError from the other copy soft and a LoopError from it hard in this copy’s stack', async () => {
    const copy = await secondCopy()
    const soft = defineTool({
      name: 'soft',
      description: '',
      input: z.object({}),
      execute: () => {
        throw new copy.ToolError('not_found', 'no such order', { hint: 'ids look like ORD-2026-NNNNN' })
      },
    })
    const hard = defineTool({
      name: 'hard',
      description: '',
      input: z.object({}),
      execute: () => {
        throw new copy.LoopError('fatal', 'the database is gone')
      },
    })
    const stack = createStack({ tools: [soft, hard] })
    const result = await stack.dispatch({ id: 'c1', name: 'soft', args: {} })
    expect(result.content).toBe('{"error":"not_found","message":"no such order","hint":"ids look like ORD-2026-NNNNN"}')
    await expect(stack.dispatch({ id: 'c2', name: 'hard', args: {} })).rejects.toSatisfy(
      (e: unknown) => LoopError.is(e) && e.kind === 'fatal' && e.message === 'the database is gone',
    )
  })

  it('reads the Symbol.for brand, not the class name or the shape', () => {
    const branded = Object.defineProperty(new Error('x'), Symbol.for('shallot.ToolError'), { value: true })
    expect(ToolError.is(branded)).toBe(true)
    const lookalike = Object.assign(new Error('x'), { name: 'ToolError', code: 'timeout', category: 'transient' })
    expect(ToolError.is(lookalike)).toBe(false)
    expect(ToolError.is({ [Symbol.for('shallot.ToolError')]: 'yes' })).toBe(false)
    expect(LoopError.is({ [Symbol.for('shallot.LoopError')]: true })).toBe(true)
  })

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['a string', 'ToolError'],
    ['a plain Error', new Error('x')],
    ['a function', () => {}],
  ])('is false for %s', (_what, value) => {
    expect(ToolError.is(value)).toBe(false)
    expect(LoopError.is(value)).toBe(false)
  })

  it('never confuses the two classes', () => {
    expect(ToolError.is(new LoopError('fatal', 'x'))).toBe(false)
    expect(LoopError.is(new ToolError('timeout', 'x'))).toBe(false)
  })

  it('keeps the brand out of enumeration, so spreading an error does not forge one', () => {
    const error = new ToolError('timeout', 'x')
    expect(Object.getOwnPropertySymbols(error).map((s) => Object.getOwnPropertyDescriptor(error, s)?.enumerable)).toEqual([false])
    expect(ToolError.is({ ...error })).toBe(false)
  })
})

describe('ToolError', () => {
  it('fills category, retryable and safeToRepeat from the code unless told otherwise', () => {
    expect(new ToolError('timeout', 'x')).toMatchObject({ category: 'transient', retryable: true, safeToRepeat: false })
    expect(new ToolError('rate_limited', 'x')).toMatchObject({ category: 'transient', retryable: true })
    expect(new ToolError('permission_denied', 'x')).toMatchObject({ category: 'fatal', retryable: false })
    expect(new ToolError('auth_required', 'x')).toMatchObject({ category: 'user', retryable: false })
    expect(new ToolError('some_new_code', 'x')).toMatchObject({ category: 'recoverable', retryable: false })
    expect(new ToolError('timeout', 'x', { category: 'fatal', retryable: false, safeToRepeat: true })).toMatchObject({
      category: 'fatal',
      retryable: false,
      safeToRepeat: true,
    })
  })

  it('is an Error named ToolError with its cause kept for logs', () => {
    const cause = new Error('ECONNRESET')
    const error = new ToolError('network_error', 'connection reset', { cause })
    expect(error).toBeInstanceOf(Error)
    expect(error.name).toBe('ToolError')
    expect(error.cause).toBe(cause)
    expect(String(error)).toBe('ToolError: connection reset')
  })

  it('never puts the cause or the details in its JSON', () => {
    const cause = new Error('password=hunter2 at /srv/app/db.ts:12')
    const error = new ToolError('upstream_error', 'HTTP 503', {
      hint: 'try again in a minute',
      retryAfterMs: 60_000,
      cause,
      details: { status: 503, secret: 'hunter2' },
    })
    expect(error.toJSON()).toEqual({
      code: 'upstream_error',
      category: 'transient',
      message: 'HTTP 503',
      hint: 'try again in a minute',
      retryable: true,
      safeToRepeat: false,
      retryAfterMs: 60_000,
    })
    expect(JSON.stringify(error)).toBe(JSON.stringify(error.toJSON()))
    expect(JSON.stringify(error)).not.toContain('hunter2')
  })

  it('leaves hint and retryAfterMs out of the JSON when they are unset', () => {
    expect(Object.keys(new ToolError('not_found', 'x').toJSON())).toEqual(['code', 'category', 'message', 'retryable', 'safeToRepeat'])
  })

  it('caps a long message at 2,000 characters and a long hint at 500, with a visible marker', () => {
    const error = new ToolError('upstream_error', 'm'.repeat(5000), { hint: 'h'.repeat(900) })
    expect(error.message).toBe(`${'m'.repeat(2000 - 29)}… [truncated from 5000 chars]`)
    expect(error.hint).toBe(`${'h'.repeat(500 - 28)}… [truncated from 900 chars]`)
    expect(new ToolError('x', 'm'.repeat(2000)).message).toBe('m'.repeat(2000))
  })

  it('never cuts a message between the halves of a surrogate pair', () => {
    const error = new ToolError('upstream_error', `a${'😀'.repeat(1500)}`)
    expect(() => encodeURIComponent(error.message)).not.toThrow()
    // 2000 - 29 leaves 1971 code units: 'a' and 985 emoji, without the half of the 986th.
    expect(error.message).toBe(`a${'😀'.repeat(985)}… [truncated from 3001 chars]`)
  })
})

describe('LoopError', () => {
  it('carries its kind, details (empty by default) and cause', () => {
    const cause = new Error('inner')
    expect(new LoopError('loop_detected', 'read_file failed 5 times', { cause, details: { tool: 'read_file' } })).toMatchObject({
      name: 'LoopError',
      kind: 'loop_detected',
      message: 'read_file failed 5 times',
      details: { tool: 'read_file' },
      cause,
    })
    expect(new LoopError('fatal', 'x').details).toEqual({})
  })

  it('never puts the cause in its JSON', () => {
    const error = new LoopError('recovery_exhausted', 'gave up after 5 attempts', {
      cause: new Error('password=hunter2'),
      details: { attempts: 5 },
    })
    const json = JSON.stringify(error)
    expect(json).not.toContain('hunter2')
    expect(JSON.parse(json)).toMatchObject({ kind: 'recovery_exhausted', details: { attempts: 5 } })
  })
})

describe('ToolError retryAfterMs', () => {
  it('keeps a finite wait of 0 or more and drops anything else, so no layer ever reads NaN', () => {
    const after = (value: unknown) => new ToolError('rate_limited', 'busy', { retryAfterMs: value as number }).retryAfterMs
    expect([after(0), after(1500), after(undefined)]).toEqual([0, 1500, undefined])
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1, '5000', null]) {
      const error = new ToolError('rate_limited', 'busy', { retryAfterMs: bad as number })
      expect(error.retryAfterMs).toBeUndefined()
      expect(error.toJSON()).not.toHaveProperty('retryAfterMs')
    }
  })
})
