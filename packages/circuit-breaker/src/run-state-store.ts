import type { Json, RunContext } from '@shallot/core'
import type { BreakerMachine } from './breaker-machine.js'
import type { BreakerState } from './breaker-state.js'

/** The key of `run.state` under which run-scoped breakers keep their states. */
export const RUN_STATE_KEY = 'shallot.circuit-breaker'

/** Where versions before 0.2 kept them; read once and moved, so an older checkpoint keeps its open circuits. */
export const LEGACY_RUN_STATE_KEY = 'circuit-breaker'

/** Run-scoped breaker states, kept as JSON in `run.state['shallot.circuit-breaker']` so checkpoints carry them. */
export interface RunStateStore {
  get(run: RunContext, key: string): BreakerState | undefined
  set(run: RunContext, key: string, state: BreakerState): void
}

type Bucket = { [key: string]: Json }

function bucketOf(run: RunContext, create: boolean): Bucket | undefined {
  const isBucket = (v: Json | undefined): v is Bucket => typeof v === 'object' && v !== null && !Array.isArray(v)
  const bucket = run.state[RUN_STATE_KEY]
  if (isBucket(bucket)) return bucket
  if (bucket === undefined && Object.hasOwn(run.state, LEGACY_RUN_STATE_KEY)) {
    const legacy = run.state[LEGACY_RUN_STATE_KEY]
    if (isBucket(legacy)) {
      delete run.state[LEGACY_RUN_STATE_KEY]
      run.state[RUN_STATE_KEY] = legacy
      return legacy
    }
  }
  if (!create) return undefined
  const fresh: Bucket = {}
  run.state[RUN_STATE_KEY] = fresh
  return fresh
}

/**
 * Reads and writes breaker states in the run's JSON state, at most `maxKeys` of them. A write moves
 * its key last; past `maxKeys` the least recently written closed circuit is forgotten first, so a
 * circuit that is open (and refusing, which writes nothing) is the last thing to be dropped.
 * A value that is not a state this breaker wrote (a corrupt or foreign checkpoint) reads as none.
 *
 * @example
 * const states = runStateStore(machine, 1000)
 * states.set(ctx.run, 'search', machine.initial)
 */
export function runStateStore(machine: Pick<BreakerMachine, 'isState'>, maxKeys: number): RunStateStore {
  // States this store wrote or already checked need no second look; a checkpoint's are checked once.
  const checked = new WeakSet<object>()
  return {
    get(run, key) {
      const value = bucketOf(run, false)?.[key]
      if (typeof value !== 'object' || value === null) return undefined
      if (checked.has(value)) return value as BreakerState
      if (!machine.isState(value)) return undefined
      checked.add(value)
      return value
    },
    set(run, key, state) {
      checked.add(state)
      const bucket = bucketOf(run, true) as Bucket
      const known = Object.hasOwn(bucket, key)
      if (known) delete bucket[key]
      bucket[key] = state
      if (known) return
      const keys = Object.keys(bucket)
      if (keys.length <= maxKeys) return
      const victim =
        keys.find((k) => k !== key && (bucket[k] as { circuit?: unknown } | null)?.circuit === 'closed') ?? keys.find((k) => k !== key)
      if (victim !== undefined) delete bucket[victim]
    },
  }
}
