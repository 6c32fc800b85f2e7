import type { ApprovalAnswer, Stack } from '@shallot/core'
import { newRunId } from '@shallot/core/kit'
import { agentEvents, agentScope, noScope } from './agent-events.js'
import { agentLoop, type ParkedOutcome, type ParkingOutcome, type RunOutcome } from './agent-loop.js'
import { type AgentOptions, type AgentSettings, agentSettings } from './agent-options.js'
import { type CheckpointStore, checkPendingTurn, checkpointSaveFailed, type ParkRecord, type RunSnapshot } from './checkpoints.js'
import { hold } from './hold-run.js'
import { DEFAULT_MAX_PARK_MS, ParkedError, parkRecordOf } from './park.js'
import { resumeOptions, withApprovals } from './resume-approvals.js'
import { usageOfSnapshot } from './usage-budget.js'

export type { ApprovalAnswer } from '@shallot/core'
export type { AgentEvent, AgentEventListener, AgentScope } from './agent-events.js'
export type { ParkedOutcome, ParkingOutcome, RunOutcome } from './agent-loop.js'
export type { AgentLimits, AgentOptions } from './agent-options.js'
export type { ParkReason, ParkRecord } from './checkpoints.js'
export { ParkedError } from './park.js'

/** An agent; one created with `park` answers {@link ParkingOutcome}s (`Agent<ParkingOutcome>`). */
export interface Agent<Outcome extends ParkingOutcome = RunOutcome> {
  readonly stack: Stack
  /**
   * Runs a task to completion, to a hard stop, or (with `park`) to a park. Never rejects for hard
   * errors: they are in the outcome. Rejects when the run's first checkpoint cannot be saved:
   * nothing has run, and a run whose progress is not durable must not start.
   */
  run(options: { input: string; signal?: AbortSignal; runId?: string }): Promise<Outcome>
  /**
   * Continues a checkpointed run at its next turn; completed turns are never re-run. A run stopped
   * for approval replays its stopped turn's calls (no new model call) with `approvals` answering
   * the pending calls by id: `'approve'`, `'deny'`, `{ deny: reason }` or `{ args }` (edited arguments).
   * A parked run replays its parked turn's waiting calls once `wakeAt` has come. Resumed earlier, an
   * agent with `park` waits out a rest shorter than `park.afterMs` and otherwise answers the same
   * `parked` outcome without running anything; an agent without `park` rejects with a
   * {@link ParkedError} naming `wakeAt`.
   */
  resume(runId: string, options?: ResumeOptions): Promise<Outcome>
}

export interface ResumeOptions {
  readonly signal?: AbortSignal
  /** Answers to the pending calls of a run stopped for approval, by call id (`outcome.report.pending`). */
  readonly approvals?: Readonly<Record<string, ApprovalAnswer>>
}

/**
 * An agent: asks the model, dispatches its tool calls through the stack, appends the results, and
 * repeats until the model answers without tool calls or a hard error stops the run.
 *
 * @example
 * const agent = createAgent({ model, tools: [readFile], middleware: defaultMiddleware() })
 * const outcome = await agent.run({ input: 'Summarise src/main.rs' })
 * if (outcome.status === 'stopped') console.error(outcome.report.text)
 *
 * // A spare model, retries and a deadline per model call, a system prompt and a token budget:
 * createAgent({
 *   model: gpt,
 *   modelMiddleware: [fallback({ models: [claude] }), ...defaultModelMiddleware()],
 *   system: 'Be brief.',
 *   tools: [readFile],
 *   limits: { maxTokens: 200_000 },
 * })
 *
 * // A worker that parks a run waiting 10 s or more instead of holding its slot:
 * const worker = createAgent({ model, tools, checkpoints, park: { afterMs: 10_000 } })
 * const outcome = await worker.run({ input: 'Book the flight' }) // may be { status: 'parked', wakeAt, reason }
 */
export function createAgent(options: AgentOptions & { park: NonNullable<AgentOptions['park']> }): Agent<ParkingOutcome>
export function createAgent(options: AgentOptions): Agent
export function createAgent(options: AgentOptions): Agent<ParkingOutcome> {
  const settings = agentSettings(options)
  const { stack, checkpoints } = settings
  const within = agentScope(settings.logger, settings.onEvent)
  const loop = agentLoop(settings, agentEvents(settings.logger, settings.onEvent), within)
  // The whole run inside the listener's context, so what the model and the tools start sees it.
  const drive =
    within === noScope
      ? loop
      : (snapshot: RunSnapshot, signal: AbortSignal | undefined, resumed: boolean) =>
          within({ type: 'run', at: settings.clock.now(), runId: snapshot.runId }, () => loop(snapshot, signal, resumed))

  const held: HeldAgent | undefined = checkpoints === undefined ? undefined : { settings, drive, checkpoints }

  return {
    stack,
    async run(options) {
      const snapshot = newRun(options)
      const { signal, runId } = options
      // A run with a given id is held like a resume, so a resume of it cannot start while it goes.
      if (held === undefined) return drive(snapshot, signal, false)
      return startHeld(held, snapshot, { anonymous: runId === undefined, signal })
    },
    async resume(runId, options = {}) {
      const answers = resumeOptions(options)
      if (held === undefined) throw new TypeError('agent.resume(): this agent has no checkpoints store; pass createAgent({ checkpoints })')
      const release = await hold(held.checkpoints, runId, 'agent.resume()', settings.logger)
      try {
        return await resumeHeld(held, runId, answers)
      } finally {
        await release()
      }
    },
  }
}

/** One run of the agent's loop, inside the listener's context when there is one. */
type Drive = (snapshot: RunSnapshot, signal: AbortSignal | undefined, resumed: boolean) => Promise<ParkingOutcome>

/** What every run of an agent with checkpoints shares: its settings, its loop and its store. */
interface HeldAgent {
  readonly settings: AgentSettings
  readonly drive: Drive
  readonly checkpoints: CheckpointStore
}

function parkedOutcome(snapshot: RunSnapshot, record: ParkRecord): ParkedOutcome {
  return {
    status: 'parked',
    runId: snapshot.runId,
    wakeAt: record.wakeAt,
    reason: record.reason,
    turns: snapshot.turns.length,
    steps: snapshot.stepsUsed,
    transcript: snapshot.transcript,
    usage: usageOfSnapshot(snapshot.usage, snapshot.runId),
  }
}

function newRun(options: { input: string; runId?: string }): RunSnapshot {
  if (typeof options !== 'object' || options === null) {
    const given =
      typeof options === 'string' ? `agent.run({ input: ${JSON.stringify(options).slice(0, 40)} })` : 'agent.run({ input: "the task" })'
    throw new TypeError(
      `agent.run(): takes an options object with the task as input, e.g. ${given}; got ${options === null ? 'null' : typeof options}`,
    )
  }
  const { input, runId } = options
  if (typeof input !== 'string') throw new TypeError('agent.run(): input must be a string (the task)')
  return {
    version: 1,
    runId: runId ?? newRunId(),
    input,
    status: 'running',
    turn: 0,
    stepsUsed: 0,
    state: {},
    transcript: [{ role: 'user', content: input }],
    turns: [],
  }
}

/** A run on a checkpoint store: its first checkpoint, and a hold on its id when the caller named it. */
async function startHeld(
  { settings, drive, checkpoints: store }: HeldAgent,
  snapshot: RunSnapshot,
  { anonymous, signal }: { readonly anonymous: boolean; readonly signal: AbortSignal | undefined },
): Promise<ParkingOutcome> {
  const { seal } = settings
  const release = anonymous ? undefined : await hold(store, snapshot.runId, 'agent.run()', settings.logger)
  const start = async () => {
    try {
      await store.save(seal === undefined ? snapshot : seal.seal(snapshot))
    } catch (err) {
      throw checkpointSaveFailed(store, snapshot.runId, 'the first checkpoint', err)
    }
  }
  if (release === undefined) {
    await start()
    return drive(snapshot, signal, false)
  }
  try {
    await start()
    return await drive(snapshot, signal, false)
  } finally {
    await release()
  }
}

/**
 * A parked run resumed before its time: still parked (its outcome) when the rest is at least the
 * park threshold or the wait is cancelled, else waited out here; undefined once it may go on.
 */
async function earlyWake(
  settings: AgentSettings,
  runId: string,
  snapshot: RunSnapshot,
  signal: AbortSignal | undefined,
): Promise<ParkedOutcome | undefined> {
  const { park, clock } = settings
  const wallNow = park?.wallNow ?? Date.now
  const record = parkRecordOf(snapshot, wallNow(), park?.maxWaitMs ?? DEFAULT_MAX_PARK_MS)
  const restMs = record.wakeAt - wallNow()
  if (restMs <= 0) return undefined
  // Early (a queue's clock ahead of ours, a caller too eager): a rest shorter than the park
  // threshold is what the agent would have waited anyway; a longer one stays parked.
  if (park === undefined) throw new ParkedError(runId, record.wakeAt, restMs)
  if (restMs >= park.afterMs) return parkedOutcome(snapshot, record)
  try {
    await clock.sleep(restMs, signal)
  } catch {
    // Cancelled before anything ran: the run is still parked, as the checkpoint says.
    return parkedOutcome(snapshot, record)
  }
  return undefined
}

async function resumeHeld(
  { settings, drive, checkpoints }: HeldAgent,
  runId: string,
  { signal, approvals }: { readonly signal?: AbortSignal; readonly approvals?: ReadonlyMap<string, ApprovalAnswer> },
): Promise<ParkingOutcome> {
  const { seal, stack } = settings
  // Loaded only once the run is held: what another resume saved before it let go is what this one continues.
  const snapshot = await checkpoints.load(runId)
  if (snapshot === undefined) throw new TypeError(`agent.resume(): no checkpoint for run "${runId}"`)
  seal?.verify(snapshot, runId)
  if (snapshot.status === 'completed') {
    return {
      status: 'completed',
      runId,
      output: snapshot.output ?? '',
      turns: snapshot.turn,
      steps: snapshot.stepsUsed,
      transcript: snapshot.transcript,
      usage: usageOfSnapshot(snapshot.usage, runId),
    }
  }
  if (snapshot.status === 'parked') {
    const stillParked = await earlyWake(settings, runId, snapshot, signal)
    if (stillParked !== undefined) return stillParked
  }
  checkPendingTurn(snapshot, new Set(stack.tools.keys()))
  if (approvals === undefined) return drive(snapshot, signal, true)
  const answered = withApprovals(snapshot, approvals)
  // Saved before the replay: a process that dies during it resumes with the answers given.
  try {
    await checkpoints.save(seal === undefined ? answered : seal.seal(answered))
  } catch (err) {
    throw checkpointSaveFailed(checkpoints, runId, 'the approvals', err)
  }
  return drive(answered, signal, true)
}
