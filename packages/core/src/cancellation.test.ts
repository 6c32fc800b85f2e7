import { getEventListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { neverAborted, onAbort, SETTLED, SignalLink } from './cancellation.js'

describe('SignalLink', () => {
  it('aborts with its parent, with the parent’s reason, whether or not its signal was read', () => {
    const parent = new AbortController()
    const unread = new SignalLink(parent.signal)
    const read = new SignalLink(parent.signal)
    const signal = read.signal
    parent.abort('caller left')
    expect([unread.aborted, unread.reason]).toEqual([true, 'caller left'])
    expect([signal.aborted, signal.reason]).toEqual([true, 'caller left'])
    // Read only now: born aborted, with the same reason.
    expect([unread.signal.aborted, unread.signal.reason]).toEqual([true, 'caller left'])
  })

  it('keeps the reason of a parent that aborted first when its owner aborts it too', () => {
    const parent = new AbortController()
    parent.abort('first')
    const link = new SignalLink(parent.signal)
    link.abort(SETTLED)
    expect(link.reason).toBe('first')
    expect(link.signal.reason).toBe('first')
  })

  it('tells every follower once, in order, even when one throws and one leaves while the abort is told', () => {
    const link = new SignalLink()
    const heard: string[] = []
    let leaveB = () => {}
    onAbort(link, () => {
      heard.push('a')
      leaveB()
    })
    leaveB = onAbort(link, () => heard.push('b'))
    onAbort(link, () => {
      heard.push('c')
      throw new Error('a follower that throws')
    })
    const offD = onAbort(link, () => heard.push('d'))
    link.abort('stop')
    offD()
    link.abort('again')
    // b left while a was told, after the abort had begun: it had already been counted in, and still hears it.
    expect(heard).toEqual(['a', 'b', 'c', 'd'])
    expect(link.reason).toBe('stop')
  })

  it('a follower that leaves while another is told does not keep the next from hearing it', () => {
    const parent = new SignalLink()
    const child = new SignalLink(parent)
    const heard: string[] = []
    // The child follows the parent (its signal read) and leaves it when it aborts, as a settled attempt does.
    void child.signal
    onAbort(parent, () => heard.push('waiter'))
    parent.abort('deadline')
    expect(child.aborted).toBe(true)
    expect(heard).toEqual(['waiter'])
  })

  it('follows a parent with one listener however many links follow it, and leaves none once released', () => {
    const parent = new AbortController()
    const links = Array.from({ length: 50 }, () => new SignalLink(parent.signal))
    for (const link of links) onAbort(link, () => {})
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1)
    for (const link of links) link.release()
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0)
    parent.abort('late')
    expect(links.every((link) => !link.aborted)).toBe(true)
  })

  it('is followed through its own list when its AbortSignal is what a follower holds: no listener per follower', () => {
    const run = new SignalLink()
    const signal = run.signal
    const heard: number[] = []
    const offs = Array.from({ length: 50 }, (_, i) => onAbort(signal, () => heard.push(i)))
    expect(getEventListeners(signal, 'abort')).toHaveLength(0)
    offs[0]?.()
    run.abort('stopped')
    expect(heard).toHaveLength(49)
    expect(signal.reason).toBe('stopped')
  })

  it('makes no AbortSignal until one is read, and never follows the never-aborting signal', () => {
    const link = new SignalLink(neverAborted)
    let heard = false
    onAbort(link, () => {
      heard = true
    })
    expect(getEventListeners(neverAborted, 'abort')).toHaveLength(0)
    link.abort(SETTLED)
    expect(heard).toBe(true)
    expect(link.signal.reason).toBe(SETTLED)
  })

  it('lets 50 listeners on its signal without a MaxListenersExceededWarning', async () => {
    const warnings: Error[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    try {
      const link = new SignalLink()
      for (let i = 0; i < 50; i++) link.signal.addEventListener('abort', () => {})
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', onWarning)
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([])
  })
})
