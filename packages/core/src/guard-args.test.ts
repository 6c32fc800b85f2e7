import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createStack, defineTool, type Middleware } from './index.js'

const TEN_MB = 10 * 1024 * 1024

/**
 * A stack with one permissive tool and one outer layer, both recording what reached them. A refused
 * call still passes the layers (so stuck-loop can count a model that repeats it), but with no arguments.
 */
function guardedStack(limits?: Parameters<typeof createStack>[0]['limits']) {
  const seen = { layer: [] as unknown[], tool: [] as unknown[] }
  const spy: Middleware = async function spy(ctx, next) {
    seen.layer.push(ctx.call.args)
    await next()
  }
  const store = defineTool({
    name: 'store',
    description: 'Stores anything',
    input: z.record(z.string(), z.unknown()),
    execute: (args) => {
      seen.tool.push(args)
      return 'stored'
    },
  })
  const stack = createStack({ middleware: [spy], tools: [store], ...(limits ? { limits } : {}) })
  const dispatch = (args: unknown) => stack.dispatch({ id: 'c1', name: 'store', args })
  return { seen, dispatch }
}

afterEach(() => {
  // A polluted prototype would leak into every later test; fail loudly and clean up.
  const proto = Object.prototype as Record<string, unknown>
  const leaked = 'polluted' in proto
  delete proto.polluted
  expect(leaked).toBe(false)
})

describe('guarding arguments: prototype pollution', () => {
  it.each([
    ['at the top level', '{"__proto__": {"polluted": true}}'],
    ['nested in an object', '{"a": {"b": {"__proto__": {"polluted": true}}}}'],
    ['inside an array', '{"list": [1, {"__proto__": {"polluted": true}}]}'],
  ])('refuses an own __proto__ key %s softly; the tool never runs and Object.prototype stays clean', async (_where, text) => {
    const { seen, dispatch } = guardedStack()
    const args: unknown = JSON.parse(text)
    const result = await dispatch(args)
    expect(result.ok).toBe(false)
    expect(result.error).toMatchObject({ code: 'invalid_arguments', message: 'arguments contain the forbidden key "__proto__"' })
    expect(result.error?.hint).toBe('remove the __proto__, constructor and prototype keys')
    expect(seen).toEqual({ layer: [undefined], tool: [] })
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false)
  })

  it('refuses the same key sent as JSON text', async () => {
    const { seen, dispatch } = guardedStack()
    const result = await dispatch('{"__proto__": {"polluted": true}}')
    expect(result.error?.message).toBe('arguments contain the forbidden key "__proto__"')
    expect(seen.tool).toEqual([])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it.each(['constructor', 'prototype'])('refuses a %s key too', async (key) => {
    const { seen, dispatch } = guardedStack()
    const result = await dispatch(JSON.parse(`{"x": {"${key}": {"polluted": true}}}`))
    expect(result.error?.message).toBe(`arguments contain the forbidden key "${key}"`)
    expect(seen).toEqual({ layer: [undefined], tool: [] })
  })
})

describe('guarding arguments: size and depth', () => {
  it('refuses 10 MB of arguments in one string softly, and the tool never runs', async () => {
    const { seen, dispatch } = guardedStack()
    const result = await dispatch({ content: 'x'.repeat(TEN_MB) })
    expect(result.ok).toBe(false)
    expect(result.error).toMatchObject({ code: 'invalid_arguments', message: 'arguments are too large: over 262144 bytes' })
    expect(result.error?.hint).toBe('send smaller arguments, or pass a reference (an id or a path) instead of the content')
    expect(result.attempts).toBe(1)
    expect(seen).toEqual({ layer: [undefined], tool: [] })
  })

  it('refuses 10 MB of JSON text before parsing it', async () => {
    const { seen, dispatch } = guardedStack()
    const result = await dispatch(JSON.stringify({ content: 'x'.repeat(TEN_MB) }))
    expect(result.error?.message).toBe('arguments are too large: over 262144 bytes')
    expect(seen).toEqual({ layer: [undefined], tool: [] })
  })

  it('refuses 10 MB spread over a wide array, reading no more elements than the cap has bytes', async () => {
    const { seen, dispatch } = guardedStack()
    let reads = 0
    const wide = new Proxy(new Array<number>(1_400_000).fill(1), {
      get(target, key, receiver) {
        reads++
        return Reflect.get(target, key, receiver)
      },
    })
    const result = await dispatch({ numbers: wide })
    expect(result.error?.message).toBe('arguments are too large: over 262144 bytes')
    expect(reads).toBeLessThanOrEqual(256 * 1024)
    expect(seen).toEqual({ layer: [undefined], tool: [] })
  })

  it('counts the holes of a sparse array, so a huge length cannot slip past the cap', async () => {
    const { seen, dispatch } = guardedStack()
    const sparse: unknown[] = []
    sparse.length = 50_000_000
    const result = await dispatch({ items: sparse })
    expect(result.error?.message).toBe('arguments are too large: over 262144 bytes')
    expect(seen.tool).toEqual([])
  })

  it('accepts arguments just under a configured cap and refuses them just over it', async () => {
    const { seen, dispatch } = guardedStack({ maxArgsBytes: 100 })
    // {"text":"…"}: 2 for the braces, 4 + 4 for the key, 2 + n for the string.
    expect((await dispatch({ text: 'a'.repeat(88) })).ok).toBe(true)
    expect((await dispatch({ text: 'a'.repeat(89) })).error?.message).toBe('arguments are too large: over 100 bytes')
    expect(seen.tool).toHaveLength(1)
  })

  it('refuses arguments nested deeper than the depth cap, and accepts them at the cap', async () => {
    const nest = (levels: number): unknown => {
      let value: unknown = {}
      for (let i = 1; i < levels; i++) value = { a: value }
      return value
    }
    const { seen, dispatch } = guardedStack()
    expect((await dispatch(nest(32))).ok).toBe(true)
    const deep = await dispatch(nest(33))
    expect(deep.error).toMatchObject({ code: 'invalid_arguments', message: 'arguments are nested too deeply: over 32 levels' })
    expect(seen.tool).toHaveLength(1)
  })
})

describe('guarding arguments: JSON text and plain values', () => {
  it('parses arguments given as JSON text, whitespace and all', async () => {
    const { seen, dispatch } = guardedStack()
    const result = await dispatch('  {"path": "src/main.rs", "lines": [1, 2]}\n')
    expect(result.ok).toBe(true)
    expect(seen.tool).toEqual([{ path: 'src/main.rs', lines: [1, 2] }])
  })

  it('reads empty text, null and undefined as no arguments', async () => {
    const { seen, dispatch } = guardedStack()
    for (const empty of ['', '   ', null, undefined]) expect((await dispatch(empty)).ok).toBe(true)
    expect(seen.tool).toEqual([{}, {}, {}, {}])
  })

  it('answers invalid JSON text softly, and the tool never runs', async () => {
    const { seen, dispatch } = guardedStack()
    const result = await dispatch('{"path": "src/main.rs",')
    expect(result.ok).toBe(false)
    expect(result.error?.code).toBe('invalid_arguments')
    expect(result.error?.message).toMatch(/^arguments are not valid JSON: /)
    expect(result.error?.hint).toBe('send the arguments as one JSON object')
    expect(JSON.parse(result.content)).toMatchObject({ error: 'invalid_arguments', hint: 'send the arguments as one JSON object' })
    expect(seen).toEqual({ layer: [undefined], tool: [] })
  })

  it.each([
    ['a Date', { when: new Date(0) }, 'arguments must be plain JSON values'],
    ['a Map', { m: new Map() }, 'arguments must be plain JSON values'],
    ['a class instance', { x: new (class Point {})() }, 'arguments must be plain JSON values'],
    ['a function', { f: () => 1 }, 'arguments must be plain JSON values, got a function'],
    ['a bigint', { n: 1n }, 'arguments must be plain JSON values, got a bigint'],
    ['a symbol', { s: Symbol('s') }, 'arguments must be plain JSON values, got a symbol'],
  ])('refuses %s in the arguments', async (_what, args, message) => {
    const { seen, dispatch } = guardedStack()
    const result = await dispatch(args)
    expect(result.error?.message).toBe(message)
    expect(seen).toEqual({ layer: [undefined], tool: [] })
  })

  it('accepts objects without a prototype', async () => {
    const { seen, dispatch } = guardedStack()
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { path: 'a' })
    expect((await dispatch(bare)).ok).toBe(true)
    expect(seen.tool).toEqual([{ path: 'a' }])
  })

  it('refuses guarded arguments with the same soft flags as a schema refusal: nothing reached the world', async () => {
    const { dispatch } = guardedStack()
    const result = await dispatch('not json')
    expect(result.error).toMatchObject({ category: 'recoverable', retryable: false, safeToRepeat: true })
  })
})
