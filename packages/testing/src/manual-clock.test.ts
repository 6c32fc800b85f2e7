import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { manualClock } from './manual-clock.js'

/** Sleeps and timers that write `label@now` into `log` when they wake. */
function recorder(clock = manualClock()) {
  const log: string[] = []
  const note = (label: string) => () => log.push(`${label}@${clock.now()}`)
  return {
    clock,
    log,
    sleep: (label: string, ms: number, signal?: AbortSignal) => clock.sleep(ms, signal).then(note(label)),
    timer: (label: string, ms: number) => clock.timer(ms, note(label)),
  }
}

describe('manualClock: what wakes, and in which order', () => {
  it('wakes sleepers in deadline order, whatever order they were registered in', async () => {
    const { clock, log, sleep, timer } = recorder()
    void sleep('c', 30)
    timer('a', 10)
    void sleep('d', 40)
    timer('b', 20)
    await clock.advance(100)
    expect(log).toEqual(['a@10', 'b@20', 'c@30', 'd@40'])
    expect(clock.now()).toBe(100)
  })

  it('wakes sleepers due at the same instant in the order they were registered, sleeps and timers alike', async () => {
    const { clock, log, sleep, timer } = recorder()
    void sleep('first', 50)
    timer('second', 50)
    void sleep('third', 50)
    timer('fourth', 50)
    void sleep('fifth', 50)
    await clock.advance(50)
    expect(log).toEqual(['first@50', 'second@50', 'third@50', 'fourth@50', 'fifth@50'])
  })

  it('orders equal deadlines by registration even when they were registered at different times', async () => {
    const { clock, log, timer } = recorder()
    timer('early-long', 30)
    await clock.advance(10)
    timer('late-short', 20)
    await clock.advance(20)
    expect(log).toEqual(['early-long@30', 'late-short@30'])
  })

  it('advance wakes only what is due by then, and time ends exactly where it was asked to', async () => {
    const { clock, log, timer } = recorder(manualClock(1_000))
    timer('due', 10)
    timer('edge', 25)
    timer('later', 26)
    await clock.advance(25)
    expect(log).toEqual(['due@1010', 'edge@1025'])
    expect([clock.now(), clock.pending]).toEqual([1_025, 1])
    await clock.advance(0)
    expect(log).toHaveLength(2)
    await clock.advance(1)
    expect(log).toEqual(['due@1010', 'edge@1025', 'later@1026'])
  })

  it('wakes, within the same advance, what a woken sleeper schedules that falls due before its end', async () => {
    const { clock, log, sleep, timer } = recorder()
    void clock.sleep(10).then(() => {
      log.push(`woke@${clock.now()}`)
      void sleep('after-sleep', 5)
      timer('zero', 0)
    })
    clock.timer(12, () => timer('from-timer', 1))
    timer('already-there', 15)
    await clock.advance(20)
    // `after-sleep` and `already-there` are both due at 15: the one registered first (at 0) wakes first.
    expect(log).toEqual(['woke@10', 'zero@10', 'from-timer@13', 'already-there@15', 'after-sleep@15'])
    expect(clock.now()).toBe(20)
  })

  it('treats a negative delay as no delay', async () => {
    const { clock, log, sleep, timer } = recorder(manualClock(5))
    timer('timer', -100)
    void sleep('sleep', -1)
    await clock.advance(0)
    expect(log).toEqual(['timer@5', 'sleep@5'])
  })

  it('treats a NaN delay as no delay, so time stays a number', async () => {
    const { clock, log, sleep, timer } = recorder(manualClock(7))
    timer('b', 1)
    void sleep('a', Number.NaN)
    timer('c', Number.NaN)
    expect(await clock.runAll()).toBe(1)
    expect(log).toEqual(['a@7', 'c@7', 'b@8'])
  })

  it('runAll wakes more sleepers than a function takes arguments, in order', async () => {
    const clock = manualClock()
    const count = 150_000
    const woke: number[] = []
    // Registered in reverse deadline order, half of them tied with a neighbour.
    for (let i = count - 1; i >= 0; i--) clock.timer(Math.floor(i / 2), () => woke.push(i))
    expect(clock.pending).toBe(count)
    expect(await clock.runAll({ maxSteps: count })).toBe(count / 2 - 1)
    expect(woke).toHaveLength(count)
    // Ties wake in registration order: of i and i - 1 (same deadline), i was registered first.
    expect(woke.slice(0, 6)).toEqual([1, 0, 3, 2, 5, 4])
    expect(woke.every((i, k) => i === (k % 2 === 0 ? k + 1 : k - 1))).toBe(true)
  })

  it('runAll moves to each deadline in turn, follows what the woken schedule, and returns the virtual ms that passed', async () => {
    const { clock, log, sleep, timer } = recorder(manualClock(100))
    timer('b', 20)
    void clock.sleep(5).then(() => {
      log.push(`a@${clock.now()}`)
      void sleep('a-then', 50)
    })
    timer('c', 20)
    expect(await clock.runAll()).toBe(55)
    expect(log).toEqual(['a@105', 'b@120', 'c@120', 'a-then@155'])
    expect([clock.now(), clock.pending]).toEqual([155, 0])
    expect(await clock.runAll()).toBe(0)
  })

  it('runAll gives up, naming the count, on something that sleeps in a loop', async () => {
    const clock = manualClock()
    const loop = (): void => {
      clock.timer(1, loop)
    }
    loop()
    await expect(clock.runAll({ maxSteps: 50 })).rejects.toThrow(
      'manualClock.runAll(): still 1 sleepers after 50 steps; something sleeps in a loop',
    )
    expect(clock.now()).toBe(50)
  })

  it('lets the microtasks a sleep wakes run before advance returns', async () => {
    const clock = manualClock()
    let steps = 0
    void clock.sleep(1).then(async () => {
      for (let i = 0; i < 100; i++) await Promise.resolve()
      steps++
    })
    await clock.advance(1)
    expect(steps).toBe(1)
  })

  it('a timer that throws rejects the advance with its error, and is gone', async () => {
    const clock = manualClock()
    const boom = new Error('boom')
    clock.timer(1, () => {
      throw boom
    })
    await expect(clock.advance(5)).rejects.toBe(boom)
    expect(clock.pending).toBe(0)
  })
})

describe('manualClock: cancel and abort', () => {
  it('a cancelled timer never fires and leaves the order of the others as it was', async () => {
    const { clock, log, sleep, timer } = recorder()
    timer('a', 10)
    const cancelB = timer('b', 10)
    void sleep('c', 10)
    const cancelD = timer('d', 5)
    timer('e', 10)
    expect(clock.pending).toBe(5)
    cancelB()
    cancelD()
    expect(clock.pending).toBe(3)
    await clock.advance(10)
    expect(log).toEqual(['a@10', 'c@10', 'e@10'])
  })

  it('cancelling twice, or after the timer fired, changes nothing', async () => {
    const { clock, log, timer } = recorder()
    const cancelFired = timer('fired', 1)
    await clock.advance(1)
    timer('other', 1)
    cancelFired()
    const cancelTwice = timer('twice', 1)
    cancelTwice()
    cancelTwice()
    expect(clock.pending).toBe(1)
    await clock.advance(1)
    expect(log).toEqual(['fired@1', 'other@2'])
  })

  it('an aborted sleep rejects with the signal reason, leaves at once, and the rest wake in order', async () => {
    const { clock, log, sleep } = recorder()
    const controller = new AbortController()
    void sleep('a', 10)
    const aborted = clock.sleep(10, controller.signal)
    void sleep('b', 10)
    expect(clock.pending).toBe(3)
    const reason = new Error('stop')
    controller.abort(reason)
    await expect(aborted).rejects.toBe(reason)
    expect(clock.pending).toBe(2)
    await clock.advance(10)
    expect(log).toEqual(['a@10', 'b@10'])
  })

  it('a sleep on an already aborted signal rejects with its reason and never waits', async () => {
    const clock = manualClock()
    const reason = { why: 'already' }
    await expect(clock.sleep(10, AbortSignal.abort(reason))).rejects.toBe(reason)
    expect(clock.pending).toBe(0)
  })

  it('a sleep that woke stops listening to its signal: a later abort changes nothing', async () => {
    const clock = manualClock()
    const controller = new AbortController()
    let listeners = 0
    const signal = controller.signal
    const add = signal.addEventListener.bind(signal)
    const remove = signal.removeEventListener.bind(signal)
    signal.addEventListener = (...args: Parameters<typeof add>) => {
      listeners++
      add(...args)
    }
    signal.removeEventListener = (...args: Parameters<typeof remove>) => {
      listeners--
      remove(...args)
    }
    const slept = clock.sleep(5, signal)
    expect(listeners).toBe(1)
    await clock.advance(5)
    await expect(slept).resolves.toBeUndefined()
    expect(listeners).toBe(0)
    controller.abort()
    expect(clock.pending).toBe(0)
  })
})

/** One step of a random program run against the clock and against the reference list. */
type Op =
  | { kind: 'sleep'; ms: number; then: number | undefined }
  | { kind: 'timer'; ms: number; then: number | undefined }
  | { kind: 'cancel'; target: number }
  | { kind: 'abort'; target: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'runAll' }

interface Entry {
  at: number
  seq: number
  label: string
  then: number | undefined
}

/**
 * The clock as it was specified: one list, sorted by deadline then registration before each wake.
 * The real clock must wake exactly what this wakes, at the same instants, in the same order.
 */
function referenceRun(ops: readonly Op[]) {
  let now = 0
  let seq = 0
  const list: Entry[] = []
  const log: string[] = []
  const pending: number[] = []
  const handles: Array<{ kind: Op['kind']; entry: Entry }> = []
  const add = (ms: number, label: string, then: number | undefined) => {
    const entry = { at: now + Math.max(0, ms), seq: seq++, label, then }
    list.push(entry)
    return entry
  }
  const wakeDue = (until: number) => {
    for (;;) {
      list.sort((a, b) => a.at - b.at || a.seq - b.seq)
      const first = list[0]
      if (first === undefined || first.at > until) break
      list.shift()
      now = Math.max(now, first.at)
      log.push(`${first.label}@${now}`)
      if (first.then !== undefined) add(first.then, `${first.label}+`, undefined)
    }
    now = Math.max(now, until)
  }
  const remove = (entry: Entry | undefined) => {
    const index = entry === undefined ? -1 : list.indexOf(entry)
    if (index >= 0) list.splice(index, 1)
  }
  ops.forEach((op, i) => {
    if (op.kind === 'sleep' || op.kind === 'timer') handles[i] = { kind: op.kind, entry: add(op.ms, `${op.kind}${i}`, op.then) }
    else if (op.kind === 'cancel') remove(handles[op.target]?.kind === 'timer' ? handles[op.target]?.entry : undefined)
    else if (op.kind === 'abort') remove(handles[op.target]?.kind === 'sleep' ? handles[op.target]?.entry : undefined)
    else if (op.kind === 'advance') wakeDue(now + op.ms)
    else while (list.length > 0) wakeDue(Math.min(...list.map((e) => e.at)))
    pending.push(list.length)
  })
  return { log, pending, now }
}

async function clockRun(ops: readonly Op[]) {
  const clock = manualClock()
  const log: string[] = []
  const pending: number[] = []
  const cancels: Array<(() => void) | undefined> = []
  const controllers: Array<AbortController | undefined> = []
  const woke = (label: string, then: number | undefined) => () => {
    log.push(`${label}@${clock.now()}`)
    if (then !== undefined) clock.timer(then, () => log.push(`${label}+@${clock.now()}`))
  }
  for (const [i, op] of ops.entries()) {
    if (op.kind === 'sleep') {
      const controller = new AbortController()
      controllers[i] = controller
      clock.sleep(op.ms, controller.signal).then(woke(`sleep${i}`, op.then), () => {})
    } else if (op.kind === 'timer') cancels[i] = clock.timer(op.ms, woke(`timer${i}`, op.then))
    else if (op.kind === 'cancel') cancels[op.target]?.()
    else if (op.kind === 'abort') controllers[op.target]?.abort()
    else if (op.kind === 'advance') await clock.advance(op.ms)
    else await clock.runAll()
    pending.push(clock.pending)
  }
  return { log, pending, now: clock.now() }
}

describe('manualClock: against the reference list', () => {
  it('wakes the same sleepers at the same instants in the same order, with the same count pending after every step', async () => {
    const ms = fc.oneof(fc.integer({ min: -5, max: 40 }), fc.constantFrom(0, 10, 20))
    const then = fc.option(fc.integer({ min: 0, max: 15 }), { nil: undefined })
    const op = (size: number): fc.Arbitrary<Op> =>
      fc.oneof(
        { arbitrary: fc.record({ kind: fc.constant('sleep' as const), ms, then }), weight: 4 },
        { arbitrary: fc.record({ kind: fc.constant('timer' as const), ms, then }), weight: 4 },
        { arbitrary: fc.record({ kind: fc.constant('cancel' as const), target: fc.nat({ max: size }) }), weight: 2 },
        { arbitrary: fc.record({ kind: fc.constant('abort' as const), target: fc.nat({ max: size }) }), weight: 2 },
        { arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 30 }) }), weight: 3 },
        { arbitrary: fc.constant({ kind: 'runAll' as const }), weight: 1 },
      )
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }).chain((size) => fc.array(op(size), { minLength: 1, maxLength: size })),
        async (ops) => {
          // A cancel names a timer and an abort a sleep; pointing elsewhere (or ahead) must be a no-op in both.
          expect(await clockRun(ops)).toEqual(referenceRun(ops))
        },
      ),
      { numRuns: 300 },
    )
  })
})
