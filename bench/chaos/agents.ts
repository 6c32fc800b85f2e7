// The agents of one soak worker process: the one every run gets, configured as a deployment would
// configure it, and one per planted misbehaviour (`--plant`), which only runs named after it get.
// Every drive of a run (one claim of it) gets a name, which the world records with each request.
import { type Agent, type CheckpointStore, createAgent, type ParkingOutcome } from '@shallot/agent'
import { type Clock, type Middleware, ToolError } from '@shallot/core'
import { idempotency, memoryIdempotencyStore } from '@shallot/idempotency'
import { policy } from '@shallot/policy'
import { retry } from '@shallot/retry'
import type { postgresStores } from '@shallot/store-postgres'
import { timeout } from '@shallot/timeout'
import type pg from 'pg'
import { PLANTS, type Plant } from './schedule.js'
import { worldModel, worldTools } from './world.js'

export interface AgentsOptions {
  readonly pool: pg.Pool
  readonly stores: ReturnType<typeof postgresStores>
  readonly prefix: string
  readonly leaseMs: number
  readonly parkMs: number
  readonly holdMs: number
  readonly clock: Clock
  readonly wallNow: () => number
}

/** The plant a run id names (`s1-plant-own_key-12`), if any. */
export function plantOf(runId: string): Plant | undefined {
  return PLANTS.find((plant) => runId.includes(`-plant-${plant}-`))
}

/**
 * Records the key the idempotency layer issued for each write it lets through, before the tool runs:
 * the checker holds every key the world sees to one of these. Nothing runs when it cannot record.
 */
function issuedKeys(pool: pg.Pool, prefix: string): Middleware {
  const sql = `INSERT INTO ${prefix}issued (run_id, tool, args, idem_key) VALUES ($1, $2, $3, $4)`
  return async function issuedKeys(ctx, next) {
    if (ctx.tool?.effect === 'write' && typeof ctx.idempotencyKey === 'string') {
      try {
        await pool.query(sql, [ctx.run.id, ctx.call.name, JSON.stringify(ctx.args), ctx.idempotencyKey])
      } catch (err) {
        throw new ToolError('upstream_error', 'the soak could not record the issued key', {
          category: 'transient',
          retryable: true,
          safeToRepeat: true,
          cause: err,
        })
      }
    }
    await next()
  }
}

/** The fleet's agents by plant (`main` for every run not planted), and the drive that holds each run in this process. */
export function soakAgents(options: AgentsOptions): {
  agentFor: (runId: string) => Agent<ParkingOutcome>
  driverOf: (runId: string) => string
} {
  const { pool, stores, prefix, leaseMs, parkMs, holdMs, clock, wallNow } = options
  const drivers = new Map<string, string>()
  let drives = 0
  /** The run's claim, and a name for the drive it starts. `honour: false` is the planted worker that takes every run it is handed. */
  const driving = (honour: boolean): CheckpointStore => ({
    name: 'postgres',
    save: (snapshot) => stores.checkpoints.save(snapshot),
    load: (runId) => stores.checkpoints.load(runId),
    async claim(runId) {
      const release = honour ? await stores.checkpoints.claim(runId) : async () => {}
      if (release === undefined) return undefined
      const driver = `${process.pid}.${++drives}`
      drivers.set(runId, driver)
      return async () => {
        if (drivers.get(runId) === driver) drivers.delete(runId)
        await release()
      }
    },
  })
  const driverOf = (runId: string) => drivers.get(runId) ?? `${process.pid}.none`
  const honouring = driving(true)
  const world = { pool, prefix, holdMs, retryAfterMs: parkMs * 2, driverOf }

  function build(plant?: Plant): Agent<ParkingOutcome> {
    const store = plant === 'forgetful_store' ? memoryIdempotencyStore() : stores.idempotency
    const keyed =
      plant === 'key_on_resume'
        ? { key: (ctx: { run: { id: string }; call: { name: string } }) => `${ctx.run.id}:${ctx.call.name}:${process.pid}` }
        : {}
    // A worker that ignores the claim keeps no count of whose drive is whose: each of its drives is an agent of its own, named once.
    const own = plant === 'ignore_claim' ? `${process.pid}.i${++drives}` : undefined
    const named = { ...world, ...(own === undefined ? {} : { driverOf: () => own }), ...(plant === undefined ? {} : { plant }) }
    return createAgent({
      model: worldModel(named),
      tools: worldTools(named),
      middleware: [
        policy({ rules: [{ action: 'approve', tools: 'refund_payment', reason: 'refunds need a person' }] }),
        idempotency({ store, leaseMs, waitMs: leaseMs * 2, ...keyed }),
        issuedKeys(pool, prefix),
        // Waits out pushback up to 200 ms; a longer Retry-After goes back to the agent, which parks.
        retry({ capMs: 200, baseMs: 50, retryBudget: false }),
        // A lookup that never answers, a write stuck behind a partition: each ends at its deadline.
        timeout({ ms: 2000 }),
      ],
      checkpoints: plant === 'ignore_claim' ? driving(false) : honouring,
      clock,
      // The planted run whose drives wait for each other at their first model request gets longer to answer.
      modelMiddleware: [retry({ maxAttempts: 4, baseMs: 50, capMs: 200 }), timeout({ ms: plant === 'ignore_claim' ? 15_000 : 2000 })],
      park: { afterMs: parkMs, wallNow },
    })
  }

  const main = build()
  const planted = new Map<Plant, Agent<ParkingOutcome>>()
  return {
    driverOf,
    agentFor(runId) {
      const plant = plantOf(runId)
      if (plant === undefined) return main
      if (plant === 'ignore_claim') return build(plant)
      let agent = planted.get(plant)
      if (agent === undefined) planted.set(plant, (agent = build(plant)))
      return agent
    },
  }
}
