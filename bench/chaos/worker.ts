// One worker process of the soak: a BullMQ worker of agent runs on the built packages, as a
// deployment runs them, with BullMQ's default stall limit. Usage: node --import resolve-hook.js
// worker.js '<json config>'. Prints "ready", then one JSON line per outcome. Reads JSON lines on
// stdin: { "jump": ms } moves the agent's clock forward; { "step": ms } steps this host's wall clock
// (Date.now, which BullMQ and the park read) by ms, back when negative. SIGTERM closes gracefully.
import { createInterface } from 'node:readline'
import type { Agent, ParkingOutcome } from '@shallot/agent'
import { agentWorker } from '@shallot/bullmq'
import { type ApprovalAnswer, type Clock, systemClock, ToolError } from '@shallot/core'
import { postgresStores } from '@shallot/store-postgres'
import pg from 'pg'
import { soakAgents } from './agents.js'
import { planOf } from './world.js'

export interface WorkerConfig {
  readonly redisPort: number
  readonly pgUrl: string
  readonly prefix: string
  readonly queue: string
  readonly concurrency: number
  readonly lockMs: number
  /** The run claim's lease (postgresStores' claimLeaseMs). */
  readonly claimMs: number
  readonly stalledMs: number
  readonly leaseMs: number
  readonly parkMs: number
  readonly holdMs: number
  /** This host's wall clock, ms ahead of the soak's (behind when negative). */
  readonly skewMs: number
  /** Only the planted runs' workers, whose own crashes are the plant, tolerate more than BullMQ's one stall. */
  readonly maxStalledCount?: number
}

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig

// A host whose clock is off: everything that reads the wall clock here (BullMQ, the park) reads it skewed.
const realNow = Date.now
let wallOffset = config.skewMs
Date.now = () => realNow() + wallOffset

// Runs wait for a connection when all are busy; PostgreSQL serves a connection per process, so not one per run.
const pool = new pg.Pool({ connectionString: config.pgUrl, max: Math.min(config.concurrency + 4, 24), connectionTimeoutMillis: 5000 })
pool.on('error', () => {})
// The job's lock detects a dead worker quickly; the run's claim outlasts a worker frozen past that lock, so
// the worker that takes the job over waits for the frozen one instead of driving the run beside it.
const stores = postgresStores({ pool, tablePrefix: config.prefix, timeoutMs: 5000, claimLeaseMs: config.claimMs })

let offset = 0
const clock: Clock = { ...systemClock, now: () => systemClock.now() + offset }
const { agentFor } = soakAgents({
  pool,
  stores,
  prefix: config.prefix,
  leaseMs: config.leaseMs,
  parkMs: config.parkMs,
  holdMs: config.holdMs,
  clock,
  wallNow: () => Date.now(),
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
    outcome = await resumeWith(outcome.runId, approvals)
  }
  return outcome
}

/**
 * Resumes with the operator's answers. Two jobs of one run (a duplicate enqueue, a take-over) can both
 * find it waiting and both answer: the second finds the answered call no longer pending, and the agent
 * refuses its answers with a TypeError. The run has gone on without them; this job resumes it as it is.
 */
async function resumeWith(runId: string, approvals: Record<string, ApprovalAnswer>): Promise<ParkingOutcome> {
  try {
    return await agentFor(runId).resume(runId, { approvals })
  } catch (err) {
    if (!(err instanceof TypeError && /waits for no approval|is not pending in run/.test(err.message))) throw err
    return agentFor(runId).resume(runId)
  }
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
  stack: agentFor('').stack,
  run: async (options) => report(await answer(await agentFor(options.runId ?? '').run(options))),
  resume: async (runId, options) => report(await answer(await agentFor(runId).resume(runId, options))),
}

const worker = agentWorker({
  name: config.queue,
  connection: { host: '127.0.0.1', port: config.redisPort, maxRetriesPerRequest: null },
  agent,
  checkpoints: stores.checkpoints,
  concurrency: config.concurrency,
  lockDuration: config.lockMs,
  stalledInterval: config.stalledMs,
  ...(config.maxStalledCount === undefined ? {} : { maxStalledCount: config.maxStalledCount }),
})
await worker.worker.waitUntilReady()

createInterface({ input: process.stdin }).on('line', (line) => {
  const command = JSON.parse(line) as { jump?: number; step?: number }
  if (typeof command.jump === 'number') offset += command.jump
  if (typeof command.step === 'number') wallOffset += command.step
})
// A deployment's shutdown hook: stop taking jobs, let the running ones finish, exit. (The fleet's
// supervisor SIGKILLs a worker that has not exited within its grace.)
process.on('SIGTERM', () => {
  const exit = () => process.exit(0)
  void worker.close().then(exit, exit)
})
process.stdout.write('ready\n')
