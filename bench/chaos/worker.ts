// One worker process of the soak: a BullMQ worker of agent runs on the built packages, as a
// deployment runs them. Usage: node --import resolve-hook.js worker.js '<json config>'.
// Prints "ready", then one JSON line per outcome. Reads JSON lines on stdin: { "jump": ms } moves
// this process's clock (the agent's monotonic clock and its wall clock for parks) forward.
import { createInterface } from 'node:readline'
import { type Agent, createAgent, type ParkingOutcome } from '@shallot/agent'
import { agentWorker } from '@shallot/bullmq'
import { type ApprovalAnswer, type Clock, systemClock, ToolError } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { policy } from '@shallot/policy'
import { retry } from '@shallot/retry'
import { postgresStores } from '@shallot/store-postgres'
import { timeout } from '@shallot/timeout'
import pg from 'pg'
import { planOf, worldModel, worldTools } from './world.js'

export interface WorkerConfig {
  readonly redisPort: number
  readonly pgUrl: string
  readonly prefix: string
  readonly queue: string
  readonly concurrency: number
  readonly lockMs: number
  readonly stalledMs: number
  readonly leaseMs: number
  readonly parkMs: number
  readonly holdMs: number
}

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig
const pool = new pg.Pool({ connectionString: config.pgUrl, max: 10, connectionTimeoutMillis: 5000 })
pool.on('error', () => {})
// A worker's claim on a run lapses with its job lock: a killed worker's runs go on elsewhere without waiting longer.
const stores = postgresStores({ pool, tablePrefix: config.prefix, timeoutMs: 5000, claimLeaseMs: config.lockMs })
const world = { pool, prefix: config.prefix, holdMs: config.holdMs, retryAfterMs: config.parkMs * 2 }

let offset = 0
const clock: Clock = { ...systemClock, now: () => systemClock.now() + offset }

const inner = createAgent({
  model: worldModel(world),
  tools: worldTools(world),
  middleware: [
    policy({ rules: [{ action: 'approve', tools: 'refund_payment', reason: 'refunds need a person' }] }),
    idempotency({ store: stores.idempotency, leaseMs: config.leaseMs, waitMs: config.leaseMs * 2 }),
    // Waits out pushback up to 200 ms; a longer Retry-After goes back to the agent, which parks.
    retry({ capMs: 200, baseMs: 50, retryBudget: false }),
  ],
  checkpoints: stores.checkpoints,
  clock,
  // Core's createAgent asks the model only through its onion: the retry and deadline of model calls are layers.
  modelMiddleware: [retry({ maxAttempts: 4, baseMs: 50, capMs: 200 }), timeout({ ms: 60_000 })],
  park: { afterMs: config.parkMs, wallNow: () => Date.now() + offset },
})

/** The scripted operator: answers each pending approval as the run's plan says, records the answer, then resumes. */
async function answer(outcome: ParkingOutcome): Promise<ParkingOutcome> {
  for (let round = 0; round < 3 && outcome.status === 'stopped' && outcome.error.kind === 'user_input_required'; round++) {
    const plan = planOf(outcome.transcript)
    const approvals: Record<string, ApprovalAnswer> = {}
    for (const call of outcome.report.pending) {
      const said: ApprovalAnswer = plan.approve ? 'approve' : { deny: 'the operator declined this refund' }
      approvals[call.callId] = said
      // Recorded before it is given: the checker holds every refund in the ledger to an approval here.
      await record(outcome.runId, call, plan.approve)
    }
    outcome = await inner.resume(outcome.runId, { approvals })
  }
  return outcome
}

/** The operator's answer, in its table; a database that is down fails the job's attempt (retried), never the run. */
async function record(runId: string, call: { callId: string; tool: string; arguments: string }, approve: boolean): Promise<void> {
  try {
    await pool.query(`INSERT INTO ${config.prefix}approvals (run_id, call_id, tool, args, answer, pid) VALUES ($1, $2, $3, $4, $5, $6)`, [
      runId,
      call.callId,
      call.tool,
      call.arguments,
      approve ? 'approve' : 'deny',
      process.pid,
    ])
  } catch (err) {
    throw new ToolError('store_unavailable', 'the operator could not record its answer', {
      category: 'transient',
      retryable: true,
      cause: err,
    })
  }
}

const report = (outcome: ParkingOutcome) => {
  const line = { runId: outcome.runId, status: outcome.status, kind: outcome.status === 'stopped' ? outcome.error.kind : undefined }
  process.stdout.write(`${JSON.stringify(line)}\n`)
  return outcome
}

const agent: Agent<ParkingOutcome> = {
  stack: inner.stack,
  run: async (options) => report(await answer(await inner.run(options))),
  resume: async (runId, options) => report(await answer(await inner.resume(runId, options))),
}

const worker = agentWorker({
  name: config.queue,
  connection: { host: '127.0.0.1', port: config.redisPort, maxRetriesPerRequest: null },
  agent,
  checkpoints: stores.checkpoints,
  concurrency: config.concurrency,
  lockDuration: config.lockMs,
  stalledInterval: config.stalledMs,
  maxStalledCount: 50,
})
await worker.worker.waitUntilReady()

createInterface({ input: process.stdin }).on('line', (line) => {
  const command = JSON.parse(line) as { jump?: number }
  if (typeof command.jump === 'number') offset += command.jump
})
process.on('SIGTERM', () => {
  void worker
    .close()
    .then(() => pool.end())
    .finally(() => process.exit(0))
})
process.stdout.write('ready\n')
