import { afterEach, beforeEach, expect, it } from 'vitest'
import { drive, installVirtualTime, uninstallVirtualTime } from './virtual-time.js'

beforeEach(() => installVirtualTime())
afterEach(() => uninstallVirtualTime())

it('waits out a 30 s timer in virtual time and measures it', async () => {
  const driven = await drive(
    () => new Promise<string>((resolve) => setTimeout(() => resolve('late'), 30_000)),
    60_000,
    () => {},
  )
  expect(driven).toMatchObject({ settled: true, value: 'late', elapsedMs: 30_000 })
})

it('declares a run that never settles hung at the cap and aborts it', async () => {
  let aborted = false
  const driven = await drive(
    () => new Promise<never>(() => {}),
    600_000,
    () => {
      aborted = true
    },
  )
  expect(driven).toMatchObject({ settled: false, elapsedMs: 600_000 })
  expect(aborted).toBe(true)
})

it('keeps a timer armed in one episode alive for the next (a process-wide scheduler arms one timer for all)', async () => {
  // A scheduler that arms a single timer and reuses it while it is pending, as core's deadline heap does.
  let armed: ReturnType<typeof setTimeout> | undefined
  const waiters: Array<{ at: number; wake: () => void }> = []
  const at = (ms: number) =>
    new Promise<void>((wake) => {
      waiters.push({ at: performance.now() + ms, wake })
      if (armed !== undefined) return
      armed = setTimeout(function tick() {
        armed = undefined
        for (const w of waiters.splice(0).sort((a, b) => a.at - b.at)) {
          if (w.at <= performance.now()) w.wake()
          else waiters.push(w)
        }
        if (waiters.length > 0) armed = setTimeout(tick, Math.max(0, Math.min(...waiters.map((w) => w.at)) - performance.now()))
      }, ms)
    })
  // The first episode ends while the scheduler's timer is still armed for a deadline it no longer needs.
  await drive(
    async () => void at(50_000),
    1000,
    () => {},
  )
  const second = await drive(
    () => at(10).then(() => 'woke'),
    120_000,
    () => {},
  )
  expect(second.value).toBe('woke')
})
