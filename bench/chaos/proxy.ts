// A TCP proxy the soak puts between the workers and a server, to break the network while the server
// lives: a partition (bytes held both ways and new connections left unanswered, delivered when it
// heals, as TCP delivers them after a short partition), added latency, and cuts (every connection
// reset at once). The target can move, as a failover moves a service address.
import { createServer, type Server, Socket } from 'node:net'

export interface FaultProxy {
  readonly port: number
  /** Where new connections go; a failover points it at the promoted server. */
  retarget(port: number): void
  /** Holds every byte both ways, and new connections, until {@link heal}. */
  partition(): void
  heal(): void
  /** Delays every byte by `ms` (0: none), keeping order. */
  delay(ms: number): void
  /** Resets every open connection (RST); held bytes are dropped. */
  cut(): void
  /** Connections cut so far, for the report. */
  readonly cuts: number
  close(): Promise<void>
}

/** One direction of a connection: the bytes waiting for their time (latency) or the partition's end. */
interface Leg {
  readonly to: () => Socket | undefined
  readonly held: { at: number; chunk: Buffer }[]
  timer?: NodeJS.Timeout | undefined
}

interface Pair {
  readonly client: Socket
  upstream?: Socket
  legs: Leg[]
  /** Connects upstream (deferred while partitioned: the SYN would not get through). */
  open: () => void
}

/**
 * Starts a proxy on a free loopback port that forwards to `127.0.0.1:<targetPort>`.
 *
 * @example
 * const proxy = await startProxy(redis.port)
 * proxy.partition(); setTimeout(() => proxy.heal(), 2000)
 */
export async function startProxy(targetPort: number): Promise<FaultProxy> {
  let target = targetPort
  let partitioned = false
  let latencyMs = 0
  let cuts = 0
  const pairs = new Set<Pair>()

  function flush(leg: Leg): void {
    const out = leg.to()
    if (out === undefined || partitioned) return
    const now = Date.now()
    while (leg.held.length > 0 && (leg.held[0]?.at ?? 0) <= now) out.write((leg.held.shift() as { chunk: Buffer }).chunk)
    const next = leg.held[0]
    if (next !== undefined && leg.timer === undefined) {
      leg.timer = setTimeout(() => {
        leg.timer = undefined
        flush(leg)
      }, next.at - now)
    }
  }

  /** Forwards a chunk now when nothing holds the leg, else in its turn. */
  function pass(leg: Leg, chunk: Buffer): void {
    const out = leg.to()
    if (out !== undefined && !partitioned && latencyMs === 0 && leg.held.length === 0) {
      out.write(chunk)
      return
    }
    leg.held.push({ at: Date.now() + latencyMs, chunk })
    flush(leg)
  }

  function accept(client: Socket): void {
    const pair: Pair = { client, legs: [], open: () => {} }
    const up: Leg = { to: () => pair.upstream, held: [] }
    const down: Leg = { to: () => client, held: [] }
    pair.legs = [up, down]
    const end = () => {
      pairs.delete(pair)
      for (const leg of pair.legs) clearTimeout(leg.timer)
      client.destroy()
      pair.upstream?.destroy()
    }
    pair.open = () => {
      if (pair.upstream !== undefined || client.destroyed) return
      const upstream = new Socket()
      // Requests and answers are small and each waits for the other: no Nagle delay on either leg.
      upstream.setNoDelay(true)
      pair.upstream = upstream
      upstream.on('data', (chunk: Buffer) => pass(down, chunk))
      upstream.on('error', end)
      upstream.on('close', end)
      upstream.connect(target, '127.0.0.1')
    }
    client.on('data', (chunk: Buffer) => pass(up, chunk))
    client.on('error', end)
    client.on('close', end)
    pairs.add(pair)
    if (!partitioned) pair.open()
  }

  const server: Server = createServer({ noDelay: true }, accept)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const address = server.address()
  if (typeof address !== 'object' || address === null) throw new Error('the fault proxy has no port')

  return {
    port: address.port,
    retarget: (port) => {
      target = port
    },
    partition: () => {
      partitioned = true
    },
    heal: () => {
      partitioned = false
      for (const pair of pairs) {
        pair.open()
        for (const leg of pair.legs) flush(leg)
      }
    },
    delay: (ms) => {
      latencyMs = ms
    },
    cut: () => {
      for (const pair of [...pairs]) {
        cuts++
        pair.client.resetAndDestroy()
        pair.upstream?.resetAndDestroy()
      }
    },
    get cuts() {
      return cuts
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const pair of [...pairs]) {
          pair.client.destroy()
          pair.upstream?.destroy()
        }
        server.close(() => resolve())
      }),
  }
}
