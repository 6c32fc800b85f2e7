// The soak's fault proxy on real loopback sockets, in front of an echo server: what a partition holds
// it delivers on healing, in order; a cut resets every connection; a retarget moves new connections.
import { connect, createServer, type Server, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { type FaultProxy, startProxy } from './proxy.js'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

async function echo(tag: string): Promise<number> {
  const server: Server = createServer((socket) => {
    socket.on('data', (chunk) => socket.write(`${tag}:${chunk}`))
    // The proxy's cut resets this end too.
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  closers.push(() => new Promise((resolve) => server.close(() => resolve())))
  return (server.address() as { port: number }).port
}

async function proxyTo(port: number): Promise<FaultProxy> {
  const proxy = await startProxy(port)
  closers.push(() => proxy.close())
  return proxy
}

function client(port: number): { socket: Socket; received: () => string; closed: Promise<string> } {
  const socket = connect(port, '127.0.0.1')
  let text = ''
  socket.on('data', (chunk) => (text += chunk.toString()))
  const closed = new Promise<string>((resolve) => {
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'))
    socket.once('close', () => resolve('closed'))
  })
  closers.push(async () => void socket.destroy())
  return { socket, received: () => text, closed }
}

/** Resolves once `check` holds, polling on the event loop (the sockets are real). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setImmediate(resolve))
}

describe('the fault proxy', () => {
  it('forwards both ways, then holds everything while partitioned and delivers it in order on healing', async () => {
    const proxy = await proxyTo(await echo('a'))
    const c = client(proxy.port)
    c.socket.write('1')
    await until(() => c.received() === 'a:1')
    proxy.partition()
    c.socket.write('2')
    c.socket.write('3')
    // A connection opened during the partition gets no answer either.
    const late = client(proxy.port)
    late.socket.write('x')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect([c.received(), late.received()]).toEqual(['a:1', ''])
    proxy.heal()
    await until(() => late.received() === 'a:x' && /^a:1a:2(a:)?3$/.test(c.received()))
  })

  it('resets every open connection on a cut, and sends new ones to the new target', async () => {
    const proxy = await proxyTo(await echo('a'))
    const c = client(proxy.port)
    c.socket.write('1')
    await until(() => c.received() === 'a:1')
    proxy.retarget(await echo('b'))
    proxy.cut()
    expect(await c.closed).toBe('ECONNRESET')
    expect(proxy.cuts).toBe(1)
    const next = client(proxy.port)
    next.socket.write('2')
    await until(() => next.received() === 'b:2')
  })

  it('adds latency to each chunk and keeps their order', async () => {
    const proxy = await proxyTo(await echo('a'))
    const c = client(proxy.port)
    c.socket.write('0')
    await until(() => c.received() === 'a:0')
    proxy.delay(40)
    const sent = performance.now()
    c.socket.write('1')
    await until(() => c.received() === 'a:0a:1')
    // Both legs are delayed: at least two latencies, less a timer's early tolerance.
    expect(performance.now() - sent).toBeGreaterThanOrEqual(75)
  })
})
