import type { Agent, CheckpointStore, ParkingOutcome } from '@shallot/agent'
import { agentQueue, agentWorker } from '../../index.js'

/** Runs as jobs: a parked run waits as a delayed job; a crashed worker's runs go on elsewhere from their checkpoints. */
export function startWorker(agent: Agent<ParkingOutcome>, checkpoints: CheckpointStore, redis: { host: string; port: number }) {
  const connection = { ...redis, maxRetriesPerRequest: null }
  const worker = agentWorker({ name: 'billing', connection, agent, checkpoints, concurrency: 16, lockDuration: 30_000 })
  const runs = agentQueue({ name: 'billing', connection })
  return { worker, runs } // elsewhere: await runs.enqueue({ runId: 'refund-42', input: 'Refund order 42' })
}
