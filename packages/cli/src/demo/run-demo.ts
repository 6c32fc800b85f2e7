import { createAgent, type RunOutcome } from '@shallot/agent'
import { type StackEvent, systemClock } from '@shallot/core'
import { manualClock, scriptedModel, seededRandom } from '@shallot/testing'
import { consecutive, defaultMiddleware } from 'shallot'
import type { RunRecord } from '../report/record.js'
import { recordRun } from '../report/record-run.js'
import { withCliNextSteps } from '../run/cli-next-steps.js'
import { story } from './story.js'
import { summarize } from './summary.js'
import { printTimeline } from './timeline.js'
import { demoTools, type Executions } from './tools.js'

/** What the demo's stop says to resume with: its scripted run keeps no checkpoint, a real one does. */
const DEMO_RESUME =
  "shallot resume <runId> --checkpoints run.db --note '<what you changed>' (shallot run --checkpoints prints the whole command when it stops; this scripted run keeps no checkpoint)"

export interface DemoOptions {
  /** Wait the real delays instead of running on virtual time. */
  realTime: boolean
  print: (line: string) => void
  /** Receives the run's record (for `--record` and `--html`) once the run is over. */
  onRecord?: (record: RunRecord) => void | Promise<void>
}

/**
 * The story: one scripted agent run that meets every layer of the default stack, printed turn by
 * turn, with a summary table and the failure report of the stopped run.
 *
 * @example
 * await runDemo({ realTime: false, print: console.log })
 */
export async function runDemo({ realTime, print, onRecord }: DemoOptions): Promise<number> {
  const virtual = realTime ? undefined : manualClock()
  const clock = virtual ?? systemClock
  const executions: Executions = new Map()
  const { tools, charges } = demoTools(clock, executions)
  const model = scriptedModel(story)
  const recorder = recordRun({ clock })
  const agent = createAgent({
    model: recorder.model(model),
    tools,
    clock,
    random: seededRandom(2026),
    middleware: defaultMiddleware({
      timeout: { ms: 2_000 },
      circuitBreaker: { policy: consecutive({ threshold: 2 }), cooldownMs: 30_000 },
    }),
    limits: { maxTurns: 30, maxSteps: 60 },
  })
  const events: StackEvent[] = []
  agent.stack.on((event) => events.push(event))
  recorder.listen(agent.stack)
  const started = clock.now()
  const pending = agent.run({ runId: 'demo-1', input: 'Find why the billing job fails and refund order ORD-2026-00042 (42.00 EUR).' })
  let outcome: RunOutcome | undefined
  void pending.then((o) => {
    outcome = o
  })
  if (virtual !== undefined) while (outcome === undefined) await virtual.runAll()
  // The report as a command-line user can follow it: the `shallot resume` a real run prints, not `agent.resume()`.
  outcome = withCliNextSteps(await pending, DEMO_RESUME, undefined)
  const elapsed = clock.now() - started
  printTimeline(print, outcome, events, model.requests)
  summarize(print, outcome, { events, executions, charges, elapsedMs: elapsed, realTime })
  const record = recorder.finish(outcome)
  await onRecord?.(record)
  return 0
}
