import { describe, expect, it } from 'vitest'
import { LoopError } from './errors.js'
import { SingleFlight } from './single-flight.js'

describe('SingleFlight', () => {
  it('gives every duplicate the outcome the leader lands, and frees the key when it lands', async () => {
    const flights = new SingleFlight<string>()
    const flight = flights.lead('k')
    const first = flights.get('k')?.wait(new AbortController().signal)
    const second = flights.get('k')?.wait(new AbortController().signal)
    expect(flight.waiting).toBe(2)
    flight.land('done')
    expect(flights.get('k')).toBeUndefined()
    await expect(Promise.all([first, second])).resolves.toEqual(['done', 'done'])
    expect(flight.waiting).toBe(0)
  })

  it('rejects every duplicate with the leader’s failure, and a failure nobody waits for is not unhandled', async () => {
    const flights = new SingleFlight<string>()
    const flight = flights.lead('k')
    const waiting = flight.wait(new AbortController().signal)
    flight.fail(new Error('upstream down'))
    await expect(waiting).rejects.toThrow('upstream down')
    flights.lead('alone').fail(new Error('nobody listens'))
    await new Promise((resolve) => setImmediate(resolve))
  })

  it('lets a waiter leave with its own abort reason while the others keep waiting', async () => {
    const flights = new SingleFlight<number>()
    const flight = flights.lead('k')
    const leaving = new AbortController()
    const heard: number[] = []
    const left = flight.wait(leaving.signal, (n) => heard.push(n))
    const stays = flight.wait(new AbortController().signal)
    leaving.abort(new LoopError('cancelled', 'the run was cancelled'))
    await expect(left).rejects.toSatisfy(LoopError.is)
    expect(heard).toEqual([1])
    flight.land(7)
    await expect(stays).resolves.toBe(7)
  })

  it('rejects at once a waiter whose signal has already aborted', async () => {
    const flight = new SingleFlight<number>().lead('k')
    await expect(flight.wait(AbortSignal.abort())).rejects.toBeDefined()
    expect(flight.waiting).toBe(0)
  })

  it('abandoned: aborts its signal and frees the key, and its late landing leaves the next flight of the key alone', async () => {
    const flights = new SingleFlight<string>()
    const old = flights.lead('k')
    old.abandon('nobody waits')
    expect(old.signal.aborted).toBe(true)
    expect(old.signal.reason).toBe('nobody waits')
    expect(flights.get('k')).toBeUndefined()
    const next = flights.lead('k')
    old.land('late')
    expect(flights.get('k')).toBe(next)
  })

  it('keeps keys apart', () => {
    const flights = new SingleFlight<string>()
    const a = flights.lead('a')
    flights.lead('b')
    a.land('x')
    expect(flights.get('a')).toBeUndefined()
    expect(flights.get('b')).toBeDefined()
  })
})
