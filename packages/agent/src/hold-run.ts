import type { Logger } from '@shallot/core'
import { type CheckpointStore, ResumeError } from './checkpoints.js'

// The runs being driven in this process, by store: two agents on one store must not drive one run at once.
const active = new WeakMap<CheckpointStore, Set<string>>()

/**
 * Takes the run for this drive: in this process, and through the store's `claim` across processes.
 * Resolves to the release, or throws `ResumeError('run_in_progress')`.
 */
export async function hold(
  checkpoints: CheckpointStore,
  runId: string,
  owner: 'agent.run()' | 'agent.resume()',
  logger: Logger,
): Promise<() => Promise<void>> {
  let runs = active.get(checkpoints)
  if (runs === undefined) {
    runs = new Set()
    active.set(checkpoints, runs)
  }
  const busy = () =>
    new ResumeError(
      'run_in_progress',
      runId,
      `${owner}: run "${runId}" is being driven by another run() or resume() right now; nothing ran. Wait for that one's outcome, then resume again if it is still stopped`,
    )
  if (runs.has(runId)) throw busy()
  runs.add(runId)
  const held = runs
  let release: (() => void | Promise<void>) | undefined
  try {
    if (checkpoints.claim !== undefined) {
      release = await checkpoints.claim(runId)
      if (release === undefined) throw busy()
    }
  } catch (err) {
    held.delete(runId)
    throw err
  }
  return async () => {
    held.delete(runId)
    // The outcome is in hand; a store that cannot take the claim back must not turn it into a rejection.
    await Promise.resolve()
      .then(release)
      .catch((err: unknown) => logger.error({ err, runId }, 'could not release the claim on the run; it lapses with its lease'))
  }
}
