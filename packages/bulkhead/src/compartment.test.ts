import { describe, expect, it } from 'vitest'
import { Compartment } from './compartment.js'

describe('Compartment', () => {
  it('hands a freed slot to the longest waiter, never to a newcomer', () => {
    const c = new Compartment(1, 2)
    const admitted: string[] = []
    expect(c.tryAcquire()).toBe(true)
    c.enqueue({ admit: () => admitted.push('first') })
    c.enqueue({ admit: () => admitted.push('second') })
    expect(c.hasRoom()).toBe(false)
    expect(c.release()).toBe(false)
    expect(admitted).toEqual(['first'])
    expect(c.running).toBe(1)
    expect(c.tryAcquire()).toBe(false)
    expect(c.release()).toBe(false)
    expect(c.release()).toBe(true)
    expect(admitted).toEqual(['first', 'second'])
    expect(c.running).toBe(0)
  })

  it('never runs more than the limit, whatever the order of acquires and releases', () => {
    const c = new Compartment(3, 100)
    let peak = 0
    for (let i = 0; i < 1000; i++) {
      if ((i * 7919) % 3 === 0 && c.running > 0) c.release()
      else if (!c.tryAcquire()) c.enqueue({ admit: () => {} })
      peak = Math.max(peak, c.running)
    }
    expect(peak).toBe(3)
  })
})
