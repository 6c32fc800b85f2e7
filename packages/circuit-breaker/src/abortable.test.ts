import { getEventListeners } from 'node:events'
import { LoopError, ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { Aborted, abortable } from './abortable.js'

const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length

describe('abortable', () => {
  it('passes the value or the error through and leaves no listener behind', async () => {
    const controller = new AbortController()
    await expect(abortable(Promise.resolve(7), controller.signal)).resolves.toBe(7)
    const boom = new Error('store down')
    await expect(abortable(Promise.reject(boom), controller.signal)).rejects.toBe(boom)
    expect(listeners(controller.signal)).toBe(0)
  })

  it('stops waiting when the signal aborts, with the reason the call should end with', async () => {
    const controller = new AbortController()
    let fail: (e: unknown) => void = () => {}
    const hung = new Promise((_, reject) => {
      fail = reject
    })
    const waiting = abortable(hung, controller.signal)
    controller.abort()
    await expect(waiting).rejects.toSatisfy((e: unknown) => e instanceof Aborted && LoopError.is(e.reason) && e.reason.kind === 'cancelled')
    fail(new Error('late rejection is swallowed'))
    expect(listeners(controller.signal)).toBe(0)
  })

  it('keeps an outer deadline as the reason and refuses at once when already aborted', async () => {
    const deadline = new ToolError('timeout', 'deadline')
    await expect(abortable(new Promise(() => {}), AbortSignal.abort(deadline))).rejects.toSatisfy(
      (e: unknown) => e instanceof Aborted && e.reason === deadline,
    )
  })
})
