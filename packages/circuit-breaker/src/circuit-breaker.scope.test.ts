import {
  createRun,
  createStack,
  defineTool,
  type Json,
  type Logger,
  LoopError,
  type ModelContext,
  OptionsError,
  type ToolContext,
  ToolError,
} from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type BreakerStore, circuitBreaker, circuitBreakerDefinition, consecutive, memoryBreakerStore } from './index.js'
import { RUN_STATE_KEY } from './run-state-store.js'

/** `fetch_url` fails for every host listed in `down`. */
function fetchTool(down: Set<string>) {
  let calls = 0
  const tool = defineTool({
    name: 'fetch_url',
    description: 'Fetch a URL',
    input: z.object({ url: z.string() }),
    effect: 'read',
    execute: ({ url }) => {
      calls++
      if (down.has(new URL(url).host)) throw new ToolError('upstream_error', `${url} answered 503`)
      return `body of ${url}`
    },
  })
  return {
    tool,
    get calls() {
      return calls
    },
  }
}

const get = (host: string, id = host) => ({ id, name: 'fetch_url', args: { url: `https://${host}/x` } })
const hostKey = (ctx: ToolContext | ModelContext) => ('call' in ctx ? new URL((ctx.call.args as { url: string }).url).host : undefined)
const code = async (p: Promise<{ error?: { code: string } }>) => (await p).error?.code ?? 'ok'

describe('lifetime', () => {
  it('shares one breaker across every run of the stack by default', async () => {
    const f = fetchTool(new Set(['a.test']))
    const stack = createStack({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }) })], tools: [f.tool] })
    const [runA, runB] = [createRun({ id: 'a' }), createRun({ id: 'b' })]
    await stack.dispatch(get('a.test'), { run: runA })
    await stack.dispatch(get('a.test'), { run: runB })
    expect(await code(stack.dispatch(get('a.test'), { run: createRun() }))).toBe('circuit_open')
  })

  it("keeps a run-scoped breaker's counts as JSON in that run's state, apart from other runs", async () => {
    const f = fetchTool(new Set(['a.test']))
    const stack = createStack({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }), lifetime: 'run' })], tools: [f.tool] })
    const [runA, runB] = [createRun({ id: 'a' }), createRun({ id: 'b' })]
    await stack.dispatch(get('a.test'), { run: runA })
    await stack.dispatch(get('a.test'), { run: runB })
    await stack.dispatch(get('a.test'), { run: runA })
    expect(await code(stack.dispatch(get('a.test'), { run: runA }))).toBe('circuit_open')
    expect(await code(stack.dispatch(get('a.test'), { run: runB }))).toBe('upstream_error')
    const state = runA.state[RUN_STATE_KEY] as Record<string, Json>
    expect(state.fetch_url).toMatchObject({ circuit: 'open', failures: 2 })
    expect(JSON.parse(JSON.stringify(runA.state))).toEqual(runA.state)
  })

  it("keeps an open circuit checkpointed under the old state key, moving it to 'shallot.circuit-breaker'", async () => {
    const f = fetchTool(new Set(['a.test']))
    const stack = createStack({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }), lifetime: 'run' })], tools: [f.tool] })
    const before = createRun({ id: 'a' })
    await stack.dispatch(get('a.test'), { run: before })
    await stack.dispatch(get('a.test'), { run: before })
    // A checkpoint from a version that kept the states under 'circuit-breaker'.
    const old = JSON.parse(JSON.stringify({ 'circuit-breaker': before.state[RUN_STATE_KEY] }))
    const after = createRun({ id: 'a', state: old })
    expect(await code(stack.dispatch(get('a.test'), { run: after }))).toBe('circuit_open')
    expect(Object.keys(after.state)).toEqual(['shallot.circuit-breaker'])
  })

  it('resumes a run-scoped count from a checkpoint', async () => {
    const f = fetchTool(new Set(['a.test']))
    const clock = manualClock()
    const middleware = () => [circuitBreaker({ policy: consecutive({ threshold: 2 }), lifetime: 'run' })]
    const before = createRun({ id: 'r' })
    await createStack({ middleware: middleware(), tools: [f.tool], clock }).dispatch(get('a.test'), { run: before })
    const checkpoint = JSON.parse(JSON.stringify(before.state)) as Record<string, Json>

    const resumed = createRun({ id: 'r', state: checkpoint })
    const stack = createStack({ middleware: middleware(), tools: [f.tool], clock })
    await stack.dispatch(get('a.test'), { run: resumed })
    expect(await code(stack.dispatch(get('a.test'), { run: resumed }))).toBe('circuit_open')
    expect(f.calls).toBe(2)
  })

  it("restarts the cooldown of a checkpoint written under another process's clock instead of staying open until that clock's time", async () => {
    const f = fetchTool(new Set(['a.test']))
    const options = { policy: consecutive({ threshold: 1 }), lifetime: 'run' as const }
    const before = createRun({ id: 'r' })
    const old = createStack({ middleware: [circuitBreaker(options)], tools: [f.tool], clock: manualClock(50_000_000) })
    await old.dispatch(get('a.test'), { run: before })

    const clock = manualClock(0)
    const resumed = createRun({ id: 'r', state: JSON.parse(JSON.stringify(before.state)) })
    const breaker = circuitBreaker(options)
    const stack = createStack({ middleware: [breaker], tools: [f.tool], clock })
    expect(stack.describeTool(f.tool, resumed)).toBe('UNAVAILABLE: circuit open, retry in 30s')
    expect((await stack.dispatch(get('a.test'), { run: resumed })).error?.retryAfterMs).toBe(30_000)
    await clock.advance(30_000)
    await stack.dispatch(get('a.test'), { run: resumed })
    expect(f.calls).toBe(2)
  })

  it('reads a corrupt checkpoint entry as a closed circuit and overwrites it', async () => {
    const f = fetchTool(new Set(['a.test']))
    const run = createRun({ state: { [RUN_STATE_KEY]: { fetch_url: 'garbage' } } })
    const stack = createStack({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 1 }), lifetime: 'run' })], tools: [f.tool] })
    expect(await code(stack.dispatch(get('a.test'), { run }))).toBe('upstream_error')
    expect(await code(stack.dispatch(get('a.test'), { run }))).toBe('circuit_open')
  })

  it('refuses a store for a run-scoped breaker', () => {
    expect(() => circuitBreaker({ lifetime: 'run', store: memoryBreakerStore() })).toThrow(OptionsError)
    expect(() => circuitBreaker({ scope: 'run', store: memoryBreakerStore() })).toThrow(/option store: applies only to lifetime 'stack'/)
  })

  it("still takes the deprecated name scope: 'run' for lifetime: 'run', in code and in a config file", async () => {
    const f = fetchTool(new Set(['a.test']))
    const layers = [
      circuitBreaker({ policy: consecutive({ threshold: 1 }), scope: 'run' }),
      circuitBreakerDefinition.build({ policy: { consecutive: { threshold: 1 } }, scope: 'run' }),
    ]
    for (const layer of layers) {
      const stack = createStack({ middleware: [layer], tools: [f.tool] })
      const [sick, other] = [createRun(), createRun()]
      expect(await code(stack.dispatch(get('a.test'), { run: sick }))).toBe('upstream_error')
      expect(await code(stack.dispatch(get('a.test'), { run: sick }))).toBe('circuit_open')
      expect(await code(stack.dispatch(get('a.test'), { run: other }))).toBe('upstream_error')
      expect(sick.state[RUN_STATE_KEY]).toBeDefined()
    }
  })

  it("takes lifetime from a config file, and a run-scoped one leaves the host's shared store alone", async () => {
    const f = fetchTool(new Set(['a.test']))
    const shared = memoryBreakerStore()
    const layer = circuitBreakerDefinition.build(
      { policy: { consecutive: { threshold: 1 } }, lifetime: 'run' },
      { stores: { breaker: shared } },
    )
    const stack = createStack({ middleware: [layer], tools: [f.tool] })
    const run = createRun()
    expect(await code(stack.dispatch(get('a.test'), { run }))).toBe('upstream_error')
    expect(await code(stack.dispatch(get('a.test'), { run }))).toBe('circuit_open')
    expect(shared.size).toBe(0)
    expect(await code(stack.dispatch(get('a.test'), { run: createRun() }))).toBe('upstream_error')
  })
})

describe('keys', () => {
  it('keeps one circuit per key, so one sick host does not block the others', async () => {
    const f = fetchTool(new Set(['down.test']))
    const breaker = circuitBreaker({ key: hostKey, policy: consecutive({ threshold: 1 }) })
    const stack = createStack({ middleware: [breaker], tools: [f.tool] })
    const run = createRun()
    await stack.dispatch(get('down.test'), { run })
    const refused = await stack.dispatch(get('down.test'), { run })
    expect(refused.error?.message).toMatch(
      /^tool 'fetch_url' \(down\.test\) temporarily unavailable: circuit breaker open after 1 failure\./,
    )
    // The run is told about the key its own calls use; a run that made no call is told nothing.
    expect(stack.describeTool(f.tool, run)).toBe('UNAVAILABLE (down.test): circuit open, retry in 30s')
    expect(stack.describeTool(f.tool, createRun())).toBeUndefined()
    expect(await code(stack.dispatch(get('up.test'), { run }))).toBe('ok')
    expect(stack.describeTool(f.tool, run)).toBeUndefined()
  })

  it('lets a call whose key is undefined bypass the breaker', async () => {
    const f = fetchTool(new Set(['down.test']))
    const stack = createStack({
      middleware: [circuitBreaker({ key: () => undefined, policy: consecutive({ threshold: 1 }) })],
      tools: [f.tool],
    })
    for (let i = 0; i < 5; i++) expect(await code(stack.dispatch(get('down.test', `${i}`)))).toBe('upstream_error')
  })

  it('forgets the least recently used key past maxKeys, never one in use', async () => {
    const f = fetchTool(new Set(['a.test', 'b.test', 'c.test']))
    const stack = createStack({
      middleware: [circuitBreaker({ key: hostKey, policy: consecutive({ threshold: 1 }), maxKeys: 2 })],
      tools: [f.tool],
    })
    await stack.dispatch(get('a.test'))
    await stack.dispatch(get('b.test'))
    expect(await code(stack.dispatch(get('a.test')))).toBe('circuit_open') // a is now the most recently used
    await stack.dispatch(get('c.test')) // evicts b
    expect(await code(stack.dispatch(get('a.test')))).toBe('circuit_open')
    expect(await code(stack.dispatch(get('b.test')))).toBe('upstream_error')
  })

  it("bounds a run-scoped breaker's keys in run.state, dropping closed circuits before open ones", async () => {
    const f = fetchTool(new Set(['down.test']))
    const stack = createStack({
      middleware: [circuitBreaker({ key: hostKey, policy: consecutive({ threshold: 1 }), lifetime: 'run', maxKeys: 3 })],
      tools: [f.tool],
    })
    const run = createRun()
    await stack.dispatch(get('down.test'), { run })
    for (let i = 0; i < 20; i++) await stack.dispatch(get(`h${i}.test`), { run })
    const bucket = run.state[RUN_STATE_KEY] as Record<string, Json>
    expect(Object.keys(bucket).length).toBeLessThanOrEqual(3)
    expect(await code(stack.dispatch(get('down.test'), { run }))).toBe('circuit_open')
  })
})

describe('store', () => {
  it('shares circuits between two stacks through one store, even an async one', async () => {
    const shared = memoryBreakerStore()
    const store: BreakerStore = { get: async (key) => shared.get(key), update: async (key, change) => shared.update(key, change) }
    const f = fetchTool(new Set(['a.test']))
    const clock = manualClock()
    const options = { store, policy: consecutive({ threshold: 2 }) }
    const worker1 = createStack({ middleware: [circuitBreaker(options)], tools: [f.tool], clock })
    const worker2 = createStack({ middleware: [circuitBreaker(options)], tools: [f.tool], clock })
    await worker1.dispatch(get('a.test'))
    await worker2.dispatch(get('a.test'))
    expect(worker2.describeTool(f.tool, createRun())).toMatch(/^UNAVAILABLE/)
    expect((await store.get('fetch_url'))?.circuit).toBe('open')
    // Worker 1 saw the circuit closed a moment ago and trusts that for storeRefreshMs (1000): its next call runs.
    // Its failure is written at once, and the store's answer shows it the opening.
    expect(await code(worker1.dispatch(get('a.test')))).toBe('upstream_error')
    expect(await code(worker1.dispatch(get('a.test')))).toBe('circuit_open')
    expect(f.calls).toBe(3)
  })

  it('with storeRefreshMs 0, asks the store on every call: an opening elsewhere stops the next call', async () => {
    const shared = memoryBreakerStore()
    const store: BreakerStore = { get: async (key) => shared.get(key), update: async (key, change) => shared.update(key, change) }
    const f = fetchTool(new Set(['a.test']))
    const options = { store, policy: consecutive({ threshold: 2 }), storeRefreshMs: 0 }
    const worker1 = createStack({ middleware: [circuitBreaker(options)], tools: [f.tool] })
    const worker2 = createStack({ middleware: [circuitBreaker(options)], tools: [f.tool] })
    await worker1.dispatch(get('a.test'))
    await worker2.dispatch(get('a.test'))
    expect(await code(worker1.dispatch(get('a.test')))).toBe('circuit_open')
    expect(f.calls).toBe(2)
  })

  it('stops waiting for a hung store as soon as the caller cancels, before or after the tool ran', async () => {
    const f = fetchTool(new Set())
    let hang = true
    const shared = memoryBreakerStore()
    const store: BreakerStore = {
      get: (key) => (hang ? new Promise(() => {}) : shared.get(key)),
      update: (key, change) => (hang ? new Promise(() => {}) : shared.update(key, change)),
    }
    const stack = createStack({ middleware: [circuitBreaker({ store })], tools: [f.tool] })
    const cancelled = (e: unknown) => LoopError.is(e) && e.kind === 'cancelled'

    const before = new AbortController()
    const admitting = stack.dispatch(get('a.test'), { signal: before.signal })
    before.abort()
    await expect(admitting).rejects.toSatisfy(cancelled)
    expect(f.calls).toBe(0)

    hang = false
    const after = new AbortController()
    const tool = defineTool({
      name: 'fetch_url',
      description: '',
      input: z.object({ url: z.string() }),
      // A failure is written at once (a success of a closed circuit would be held): the settle waits on the store.
      execute: () => {
        hang = true
        setImmediate(() => after.abort())
        throw new ToolError('network_error', 'connection reset', { category: 'transient' })
      },
    })
    const stack2 = createStack({ middleware: [circuitBreaker({ store })], tools: [tool] })
    await expect(stack2.dispatch(get('a.test'), { signal: after.signal })).rejects.toSatisfy(cancelled)
  })

  it('takes a synchronous store as it is', async () => {
    const store = memoryBreakerStore()
    const f = fetchTool(new Set(['a.test']))
    const stack = createStack({ middleware: [circuitBreaker({ store, policy: consecutive({ threshold: 1 }) })], tools: [f.tool] })
    await stack.dispatch(get('a.test'))
    expect(store.peek('fetch_url')?.circuit).toBe('open')
    expect(await code(stack.dispatch(get('a.test')))).toBe('circuit_open')
  })

  it('falls back to local state, logs and emits when the store fails', async () => {
    const warnings: string[] = []
    const logger: Logger = {
      debug() {},
      info() {},
      warn: (_obj, msg) => void warnings.push(msg ?? ''),
      error() {},
      child: () => logger,
    }
    const store: BreakerStore = {
      get: () => undefined,
      update: () => Promise.reject(new Error('ECONNREFUSED redis:6379')),
    }
    const f = fetchTool(new Set(['a.test']))
    const stack = createStack({ middleware: [circuitBreaker({ store, policy: consecutive({ threshold: 2 }) })], tools: [f.tool], logger })
    const types: string[] = []
    stack.on((e) => types.push(e.type))
    await stack.dispatch(get('a.test'))
    await stack.dispatch(get('a.test'))
    expect(await code(stack.dispatch(get('a.test')))).toBe('circuit_open')
    expect(f.calls).toBe(2)
    // Each failure's write, and the refused call's admission (the circuit was seen open); the second call's
    // admission asked nothing: the circuit was seen closed a moment ago.
    expect(types.filter((t) => t === 'circuit-breaker.store_error')).toHaveLength(3)
    expect(warnings).toContain('circuit breaker store failed; using local state')
  })
})
