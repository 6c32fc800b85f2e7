import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createRun, createStack, defineTool, type Middleware } from './index.js'

/** A layer that writes down the stackKey each call shows it. */
function keysSeen() {
  const seen: object[] = []
  const layer: Middleware = async function watch(ctx, next) {
    seen.push(ctx.stackKey)
    await next()
  }
  return { seen, layer }
}

const echo = defineTool({ name: 'echo', description: 'echo', input: z.object({}), effect: 'read', execute: () => 'hi' })

describe('ctx.stackKey', () => {
  it('is one object per stack: the same for every call and run of a stack, another for another stack sharing the layer', async () => {
    const { seen, layer } = keysSeen()
    const first = createStack({ middleware: [layer], tools: [echo] })
    const second = createStack({ middleware: [layer], tools: [echo] })
    await first.dispatch({ id: 'a', name: 'echo', args: {} })
    await first.dispatch({ id: 'b', name: 'echo', args: {} }, { run: createRun() })
    await second.dispatch({ id: 'a', name: 'echo', args: {} })
    const [a, b, c] = seen
    expect(typeof a).toBe('object')
    expect(b).toBe(a)
    expect(c).not.toBe(a)
    // A key of a WeakMap, nothing to write on.
    expect(Object.isFrozen(a)).toBe(true)
    expect(new WeakMap([[a as object, 1]]).get(b as object)).toBe(1)
  })

  it('survives a swap of the layers: it stands for the stack, not for its middleware', async () => {
    const { seen, layer } = keysSeen()
    const stack = createStack({ middleware: [layer], tools: [echo] })
    await stack.dispatch({ id: 'a', name: 'echo', args: {} })
    stack.setMiddleware([layer])
    await stack.dispatch({ id: 'b', name: 'echo', args: {} })
    expect(seen[1]).toBe(seen[0])
  })
})
