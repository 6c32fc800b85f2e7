import { getEventListeners } from 'node:events'
import { createRun, createStack, LoopError, type ToolCall } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it, vi } from 'vitest'
import { type PolicyCheck, type PolicyOptions, policy } from './index.js'
import { countedTools } from './test-tools.js'

const pay: ToolCall = { id: 'call_1', name: 'transfer', args: { to: 'bob', amountCents: 1 } }
const never: PolicyCheck = () => new Promise<boolean>(() => {})

function setup(options: PolicyOptions) {
  const clock = manualClock()
  const error = vi.fn()
  const logger = { debug() {}, info() {}, warn() {}, error, child: () => logger }
  const { runs, tools } = countedTools()
  const stack = createStack({ tools, clock, logger, middleware: [policy(options)] })
  const events: string[] = []
  stack.on((event) => events.push(event.type))
  return { clock, error, events, runs, stack }
}

describe('a when check that never settles is bounded: the call is denied, nothing waits forever', () => {
  it('denies the call as blocked_by_policy once whenTimeoutMs passes on the clock, and leaves no timer behind', async () => {
    const { clock, error, events, runs, stack } = setup({
      rules: [{ id: 'fraud-check', action: 'allow', tools: 'transfer', when: never }],
      whenTimeoutMs: 2_000,
    })
    let settled = false
    const pending = stack.dispatch(pay).finally(() => {
      settled = true
    })
    await clock.advance(1_999)
    expect(settled).toBe(false)
    await clock.advance(1)
    const result = await pending
    expect(result.error?.code).toBe('blocked_by_policy')
    expect(result.content).toContain(
      "the call cannot be checked (rule fraud-check's check did not answer within 2000 ms), so it is refused",
    )
    expect(events).toContain('policy.undecidable')
    expect(error).toHaveBeenCalledWith(
      { rule: 'fraud-check', timeoutMs: 2_000 },
      'policy: a rule check did not answer in time; the call is denied',
    )
    expect(runs.transfer).toBe(0)
    expect(clock.pending).toBe(0)
  })

  it('waits 10 seconds by default, whatever the rule action: a deny rule that cannot answer denies too', async () => {
    const { clock, runs, stack } = setup({ rules: [{ action: 'deny', tools: 'transfer', when: never }], default: 'allow' })
    const pending = stack.dispatch(pay)
    await clock.advance(10_000)
    expect((await pending).content).toContain('did not answer within 10000 ms')
    expect(runs.transfer).toBe(0)
  })

  it('stops waiting at once when the run is cancelled, and leaves neither a timer nor a listener on the run signal', async () => {
    const { clock, runs, stack } = setup({ rules: [{ action: 'allow', tools: 'transfer', when: never }] })
    const controller = new AbortController()
    const pending = stack.dispatch(pay, { run: createRun({ signal: controller.signal }) })
    await clock.advance(1)
    controller.abort()
    await expect(pending).rejects.toSatisfy((err: unknown) => LoopError.is(err) && err.kind === 'cancelled')
    expect(clock.pending).toBe(0)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    expect(runs.transfer).toBe(0)
  })

  it('refuses at once a call whose run was cancelled before its check started', async () => {
    const { clock, runs, stack } = setup({ rules: [{ action: 'allow', tools: 'transfer', when: never }] })
    const controller = new AbortController()
    controller.abort()
    await expect(stack.dispatch(pay, { run: createRun({ signal: controller.signal }) })).rejects.toSatisfy(LoopError.is)
    expect(clock.pending).toBe(0)
    expect(runs.transfer).toBe(0)
  })

  it('ignores an answer or a rejection that comes after the timeout: no run, no unhandled rejection', async () => {
    const late: Array<{ resolve: (v: boolean) => void; reject: (e: unknown) => void }> = []
    const { clock, runs, stack } = setup({
      rules: [
        { action: 'allow', tools: 'transfer', when: () => new Promise<boolean>((resolve, reject) => late.push({ resolve, reject })) },
      ],
      default: 'deny',
      whenTimeoutMs: 50,
    })
    const first = stack.dispatch(pay)
    const second = stack.dispatch({ ...pay, id: 'call_2' })
    await clock.advance(50)
    expect((await first).error?.code).toBe('blocked_by_policy')
    expect((await second).error?.code).toBe('blocked_by_policy')
    late[0]?.reject(new Error('lookup failed late'))
    late[1]?.resolve(true)
    await clock.advance(1)
    expect(runs.transfer).toBe(0)
  })

  it('acts on an answer that comes just before the timeout, and clears the timer', async () => {
    const { clock, runs, stack } = setup({
      rules: [{ action: 'allow', tools: 'transfer', when: () => clock.sleep(999).then(() => true) }],
      default: 'deny',
      whenTimeoutMs: 1_000,
    })
    const pending = stack.dispatch(pay)
    await clock.advance(999)
    expect((await pending).ok).toBe(true)
    expect(runs.transfer).toBe(1)
    expect(clock.pending).toBe(0)
  })

  it('denies when the check returns a thenable whose then throws, or a revoked Proxy', async () => {
    const { proxy, revoke } = Proxy.revocable({}, {})
    revoke()
    const hostile: PolicyCheck[] = [
      () =>
        ({
          // biome-ignore lint/suspicious/noThenProperty: a hostile thenable is the point of the test
          then() {
            throw new Error('then exploded')
          },
        }) as unknown as Promise<boolean>,
      () => proxy as unknown as boolean,
    ]
    for (const when of hostile) {
      const { clock, runs, stack } = setup({ rules: [{ action: 'allow', tools: 'transfer', when }], default: 'allow' })
      const result = await stack.dispatch(pay)
      expect(result.error?.code).toBe('blocked_by_policy')
      expect(runs.transfer).toBe(0)
      expect(clock.pending).toBe(0)
    }
  })

  it('refuses a bad whenTimeoutMs naming the option', () => {
    expect(() => policy({ whenTimeoutMs: 0 })).toThrow(/whenTimeoutMs/)
    expect(() => policy({ whenTimeoutMs: 1.5 })).toThrow(/whenTimeoutMs/)
  })
})
