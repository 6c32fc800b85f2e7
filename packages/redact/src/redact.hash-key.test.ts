import { createStack, defineTool, ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { redact } from './index.js'

function stackReturning(value: unknown, hashKey: string, maxOutputChars = 20_000) {
  const lookup = defineTool({
    name: 'lookup',
    description: 'Looks a customer up',
    input: z.object({}),
    effect: 'read',
    execute: () => value,
  })
  const failing = defineTool({
    name: 'failing',
    description: 'Fails, naming what it holds',
    input: z.object({}),
    effect: 'read',
    execute: () => {
      throw new ToolError('upstream_error', `signature check failed with ${String(value)}`)
    },
  })
  const stack = createStack({
    tools: [lookup, failing],
    limits: { maxOutputChars },
    middleware: [redact({ strategies: { email: 'hash' }, hashKey })],
  })
  return {
    result: () => stack.dispatch({ id: 'c1', name: 'lookup', args: {} }),
    error: () => stack.dispatch({ id: 'c2', name: 'failing', args: {} }),
  }
}

/** Every run of `length` characters of `key`: none may reach the model, not even a cut half. */
const piecesOf = (key: string, length = 8) => Array.from({ length: key.length - length + 1 }, (_, i) => key.slice(i, i + length))

describe('redact: the hash key never reaches the model, in a result as in an error', () => {
  const key = 'k3y-7f1c0a9e2b7d4c31-desk'

  it.each([
    ['in a flat string', `signed with ${key}`],
    ['beside an e-mail redact hashed', { email: 'ann.lee@example.com', signedWith: key }],
    ['nested deep', { a: { b: [{ c: { d: `the key is ${key}.` } }] } }],
    ['as an object key', { [key]: true }],
    ['split by invisible characters', `key ${key.slice(0, 6)}\u200B${key.slice(6, 12)}\u{E0041}${key.slice(12)}`],
  ])('%s', async (_, value) => {
    const { result } = stackReturning(value, key)
    const read = await result()
    expect(read.ok).toBe(true)
    for (const piece of piecesOf(key)) expect(read.content).not.toContain(piece)
    expect(read.content).toContain('[redacted]')
  })

  it('in a result cut at the output cap, the key straddling the cut', async () => {
    // One long word: the cut falls inside it, and inside the key.
    const value = `${'x'.repeat(50)}${key}${'y'.repeat(200)}`
    const read = await stackReturning(value, key, 100).result()
    expect(read.content).toContain('[truncated from')
    for (const piece of piecesOf(key, 6)) expect(read.content).not.toContain(piece)
  })

  it('in a result that holds the key as escaped JSON, escaped up to three times over', async () => {
    const quoted = 'k3y"7f1c\\0a9e2b7d4c31'
    const once = JSON.stringify({ key: quoted })
    const twice = JSON.stringify({ body: once })
    for (const value of [{ payload: once }, { payload: twice }, once, twice]) {
      const read = await stackReturning(value, quoted).result()
      expect(read.content).not.toContain('7f1c')
      expect(read.content).not.toContain('0a9e2b7d4c31')
    }
  })

  it('in an error text, as before', async () => {
    const read = await stackReturning(`key ${key}`, key).error()
    expect(read.error?.code).toBe('upstream_error')
    for (const piece of piecesOf(key)) expect(read.content).not.toContain(piece)
  })
})
