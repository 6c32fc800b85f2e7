// The fleet row: the default stack on a private Redis (`redisStores()`, one connection, as one worker
// of a fleet has) against the same stack on its in-memory stores, calls per wall second at concurrency
// 1 and 50, reads and writes. Each round measures both back to back, the order alternating, and the
// ratio is taken within the round; the median ratio is reported. Skipped, with the reason printed,
// when redis-server is not installed.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { redisStores } from '@shallot/store-redis'
import { Redis } from 'ioredis'
import { defaultMiddleware } from 'shallot'
import { distinctCall, readTool, stackOf, writeTool } from './fixtures.js'

const BINARY = process.env.REDIS_SERVER ?? 'redis-server'

interface Shape {
  readonly kind: 'read' | 'write'
  readonly concurrency: number
  /** The least Redis ÷ memory ratio this row must reach, or undefined when the row is for information. */
  readonly target: number | undefined
}

const SHAPES: readonly Shape[] = [
  { kind: 'read', concurrency: 1, target: 0.5 },
  { kind: 'read', concurrency: 50, target: 0.5 },
  { kind: 'write', concurrency: 1, target: undefined },
  { kind: 'write', concurrency: 50, target: 0.1 },
]

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

/** A private redis-server on 127.0.0.1, without persistence; `undefined` and the reason when there is none to start. */
async function startRedis(): Promise<{ url: string; stop: () => void } | { skipped: string }> {
  const probe = spawnSync(BINARY, ['--version'], { encoding: 'utf8' })
  if (probe.error !== undefined || probe.status !== 0) return { skipped: `${BINARY} is not installed (apt-get install redis-server)` }
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'shallot-bench-redis-'))
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning']
  const child: ChildProcess = spawn(BINARY, args, { stdio: 'ignore' })
  const url = `redis://127.0.0.1:${port}`
  const probeClient = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  // Refused until the server listens: each attempt's failure is its rejection, not an unheard error event.
  probeClient.on('error', () => {})
  for (let attempt = 0; ; attempt++) {
    try {
      await probeClient.connect()
      break
    } catch (err) {
      if (attempt >= 100) {
        child.kill('SIGKILL')
        return { skipped: `redis-server did not answer on port ${port}: ${String(err)}` }
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  probeClient.disconnect()
  return {
    url,
    stop() {
      child.kill('SIGTERM')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Calls per wall second, and per CPU second of this process and the Redis server together (what the calls cost, whatever else the machine runs). */
interface Rate {
  readonly wall: number
  readonly cpu: number
}

/** The Redis server's CPU time so far, in seconds (user and system). */
async function serverCpu(client: Redis): Promise<number> {
  const info = await client.info('cpu')
  const seconds = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN)
  return seconds('used_cpu_user') + seconds('used_cpu_sys')
}

/** The rates of `concurrency` loops calling `call` back to back for `ms`. */
async function rateOf(call: () => Promise<unknown>, concurrency: number, ms: number, client: Redis): Promise<Rate> {
  let done = 0
  const end = performance.now() + ms
  const loop = async () => {
    while (performance.now() < end) {
      await call()
      done++
    }
  }
  const server = await serverCpu(client)
  const cpu = process.cpuUsage()
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, loop))
  const wallSeconds = (performance.now() - started) / 1000
  const used = process.cpuUsage(cpu)
  const cpuSeconds = (used.user + used.system) / 1e6 + ((await serverCpu(client)) - server)
  return { wall: done / wallSeconds, cpu: done / cpuSeconds }
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN

/** One row measured: the median rates of each store, and the medians of the per-round ratios (Redis ÷ memory). */
export interface FleetRow extends Shape {
  readonly memory: Rate
  readonly redis: Rate
  readonly ratio: Rate
}

/** Measures one row: an unmeasured round each, then `rounds` rounds of both, the order alternating. */
async function measureRow(shape: Shape, client: Redis, rounds: number, ms: number): Promise<FleetRow> {
  const tool = shape.kind === 'read' ? readTool : writeTool
  const stores = redisStores({ client, prefix: `bench-${shape.kind}-${shape.concurrency}` })
  const onRedis = defaultMiddleware({
    idempotency: { store: stores.idempotency },
    circuitBreaker: { store: stores.breaker },
    retry: { retryBudget: stores.retryBudget },
  })
  const stacks = { memory: stackOf(defaultMiddleware(), [tool]), redis: stackOf(onRedis, [tool]) }
  const calls = {
    memory: () => stacks.memory.dispatch(distinctCall(tool.name)),
    redis: () => stacks.redis.dispatch(distinctCall(tool.name)),
  }
  // The unmeasured round: the scripts loaded, the breaker read, the code optimized.
  for (const which of ['memory', 'redis'] as const) await rateOf(calls[which], shape.concurrency, ms, client)
  const measured = { memory: [] as Rate[], redis: [] as Rate[] }
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (['memory', 'redis'] as const) : (['redis', 'memory'] as const)
    for (const which of order) measured[which].push(await rateOf(calls[which], shape.concurrency, ms, client))
  }
  const of = (rates: Rate[], k: keyof Rate) => median(rates.map((r) => r[k]))
  const ratio = (k: keyof Rate) => median(measured.redis.map((r, i) => r[k] / (measured.memory[i] as Rate)[k]))
  return {
    ...shape,
    memory: { wall: of(measured.memory, 'wall'), cpu: of(measured.memory, 'cpu') },
    redis: { wall: of(measured.redis, 'wall'), cpu: of(measured.redis, 'cpu') },
    ratio: { wall: ratio('wall'), cpu: ratio('cpu') },
  }
}

const perSecond = (n: number) => `${Math.round(n).toLocaleString('en').padStart(9)}/s`
const percent = (r: number) => `${(r * 100).toFixed(1).padStart(5)} %`

/**
 * Measures and prints the fleet table: `rounds` rounds of `ms` per store and row. The targets are
 * judged on wall seconds (throughput as a user sees it); the CPU column is the same ratio counted in
 * CPU seconds of this process and the Redis server, which the machine's other work moves far less.
 *
 * @example
 * await fleetTable(false) // 9 rounds of 500 ms per store and row
 */
export async function fleetTable(quick: boolean): Promise<FleetRow[] | undefined> {
  const server = await startRedis()
  if ('skipped' in server) {
    console.log(`\nfleet: skipped, ${server.skipped}`)
    return undefined
  }
  const client = new Redis(server.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true })
  client.on('error', (err: Error) => console.log(`fleet: redis client: ${err.message}`))
  try {
    await client.connect()
    // Many short rounds rather than a few long ones: on a shared machine a burst of load then spoils one round's ratio, not the median.
    const [rounds, ms] = quick ? [5, 200] : [9, 500]
    const rows: FleetRow[] = []
    for (const shape of SHAPES) rows.push(await measureRow(shape, client, rounds, ms))
    console.log(
      `\nfleet: the default stack on Redis stores ÷ on memory stores (${rounds} rounds of ${ms} ms; CPU: this process and redis-server)`,
    )
    for (const r of rows) {
      const target = r.target === undefined ? '' : `  ${r.ratio.wall >= r.target ? 'met ' : 'MISS'} target ≥ ${r.target * 100} %`
      const what = `${r.kind}s at concurrency ${r.concurrency}`.padEnd(26)
      console.log(
        `  ${what} memory ${perSecond(r.memory.wall)}  redis ${perSecond(r.redis.wall)}  ${percent(r.ratio.wall)}   per CPU second ${percent(r.ratio.cpu)}${target}`,
      )
    }
    return rows
  } finally {
    client.disconnect()
    server.stop()
  }
}
