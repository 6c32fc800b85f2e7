import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createRun, createStack, defineTool } from './index.js'

// A full, synchronous collection on demand, so what is retained can be told from what is merely not yet collected.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

function retainedHeap(): number {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

const quiet = defineTool({
  name: 'quiet',
  description: '',
  input: z.object({ n: z.number() }),
  effect: 'read',
  execute: async ({ n }) => n,
})
const listening = defineTool({
  name: 'listening',
  description: '',
  input: z.object({ n: z.number() }),
  effect: 'read',
  execute: async ({ n }, { signal }) => {
    signal.addEventListener('abort', () => {}, { once: true })
    return n
  },
})

describe('one long-lived run signal', () => {
  it('retains nothing per call over 50,000 dispatches on a run signal and a dispatch signal', async () => {
    const stack = createStack({ tools: [quiet, listening] })
    const run = createRun({ signal: new AbortController().signal })
    const turn = new AbortController().signal
    const batch = async () => {
      for (let n = 0; n < 50_000; n++) {
        const result = await stack.dispatch({ id: 'c', name: n % 10 === 0 ? 'listening' : 'quiet', args: { n } }, { run, signal: turn })
        if (!result.ok) throw new Error('the call failed')
      }
    }
    // The first batch warms every cache; only what the second one adds counts.
    await batch()
    const before = retainedHeap()
    await batch()
    const perCall = (retainedHeap() - before) / 50_000
    // Combining the two signals per call with AbortSignal.any kept about 85 bytes per call alive.
    expect(perCall).toBeLessThan(8)
  }, 60_000)

  it('prints no MaxListenersExceededWarning with 50 calls waiting at once, each listening to its signal', async () => {
    const warnings: Error[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    try {
      let release = () => {}
      const gate = new Promise<void>((resolve) => {
        release = resolve
      })
      const waiting = defineTool({
        name: 'waiting',
        description: '',
        input: z.object({ n: z.number() }),
        effect: 'read',
        execute: async ({ n }, { signal }) => {
          signal.addEventListener('abort', () => {}, { once: true })
          await gate
          return n
        },
      })
      const stack = createStack({ tools: [waiting] })
      const controller = new AbortController()
      const run = createRun({ signal: controller.signal })
      const calls = Array.from({ length: 50 }, (_, n) => stack.dispatch({ id: `c${n}`, name: 'waiting', args: { n } }, { run }))
      await new Promise((resolve) => setImmediate(resolve))
      release()
      expect((await Promise.all(calls)).every((r) => r.ok)).toBe(true)
      // Node reports the warning on the next tick.
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', onWarning)
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([])
  })
})
