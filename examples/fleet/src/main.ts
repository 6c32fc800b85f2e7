// N worker processes sharing one local Redis through @shallot/store-redis. Starts a private
// redis-server, the workers, runs each scene, and prints what it measured.
// Usage: node dist/main.js [workers=8] [calls per worker in the throughput scene=200]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type FleetWorker, startFleet, stopFleet } from './fleet.js'
import { type PrivateRedis, startPrivateRedis } from './private-redis.js'
import type { WorkerConfig } from './protocol.js'
import { breaker } from './scenes/breaker.js'
import { burst } from './scenes/burst.js'
import { crash } from './scenes/crash.js'
import { outage } from './scenes/outage.js'
import type { SceneContext, SceneReport } from './scenes/scene.js'
import { throughput } from './scenes/throughput.js'

const count = Number(process.argv[2] ?? 8)
const perWorker = Number(process.argv[3] ?? 200)
const dir = mkdtempSync(join(tmpdir(), 'shallot-fleet-'))
let redis: PrivateRedis | undefined
let workers: FleetWorker[] = []
try {
  redis = await startPrivateRedis(dir)
  const config: WorkerConfig = { port: redis.port, effects: join(dir, 'effects.log'), leaseMs: 2000, holdMs: 200, cooldownMs: 500 }
  workers = await startFleet(count, config)
  const context: SceneContext = { workers, redis, config }
  const reports: SceneReport[] = [
    await burst(context),
    await breaker(context),
    await crash(context),
    await outage(context),
    await throughput(context, perWorker),
  ]
  console.log(`shallot fleet: ${count} worker processes, one redis-server on 127.0.0.1:${redis.port}\n`)
  for (const report of reports) {
    console.log(`${report.title}`)
    for (const [label, value] of report.figures) console.log(`  ${label.padEnd(52)} ${value}`)
    console.log('')
  }
} finally {
  await stopFleet(workers)
  await redis?.stop()
  rmSync(dir, { recursive: true, force: true })
}
