// A worker process for src/agent-worker.model-park.test.ts: one BullMQ worker of agent runs on the BUILT
// packages (dist), as a deployment would, on the run's SQLite checkpoints file. Its model answers (the
// provider's pushback is over). Usage: node model-park-worker.mjs '<json config>'.
// Prints "ready" once the worker runs, then one JSON line per model request and per outcome.
import { createAgent } from '@shallot/agent'
import { agentWorker } from '@shallot/bullmq'
import { sqliteCheckpoints } from '@shallot/store-sqlite'

const config = JSON.parse(process.argv[2])
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`)
const checkpoints = sqliteCheckpoints({ path: config.checkpoints })

const model = {
  name: 'gpt',
  async generate({ messages }) {
    print({ model: 'asked', pid: process.pid, at: Date.now(), messages: messages.length })
    return { text: `answered in ${process.pid}` }
  },
}

const agent = createAgent({ model, tools: [], checkpoints, park: { afterMs: config.parkAfterMs } })
const worker = agentWorker({
  name: config.queue,
  connection: { host: '127.0.0.1', port: config.redisPort, maxRetriesPerRequest: null },
  agent,
  checkpoints,
  onOutcome: (outcome) => print({ outcome: outcome.status, pid: process.pid, at: Date.now() }),
})
await worker.worker.waitUntilReady()
process.stdout.write('ready\n')
process.on('SIGTERM', async () => {
  await worker.close()
  process.exit(0)
})
