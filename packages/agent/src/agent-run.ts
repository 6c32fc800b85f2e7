import {
  createRun,
  type Logger,
  LoopError,
  type Message,
  type ModelTool,
  type MutableRun,
  type RunContext,
  silentLogger,
  type ToolResult,
} from '@shallot/core'
import { createSanitizer, dropApprovals, isSilent, SignalLink } from '@shallot/core/kit'
import { type AgentEventSink, type AgentScopeRunner, noAgentEvents } from './agent-events.js'
import type { AgentSettings } from './agent-options.js'
import type { ParkedOutcome, RunOutcome } from './agent-outcome.js'
import { pendingTurnOf, record, settledCall } from './agent-turn-records.js'
import {
  checkpointSaveFailed,
  isCheckpointSaveFailure,
  type ParkRecord,
  type PendingTurn,
  type RunSnapshot,
  type TurnRecord,
} from './checkpoints.js'
import type { ModelCallEnv } from './model-call.js'
import { keptBesideWaits, longestWait, type ParkSettings, parkRecord } from './park.js'
import { buildReport } from './report.js'
import { isWaiting } from './turn-dispatch.js'
import { type RunUsage, usageOfSnapshot } from './usage-budget.js'

/** Per agent: what every run of its loop shares. */
export interface LoopShared {
  readonly settings: AgentSettings
  readonly emit: AgentEventSink
  readonly within: AgentScopeRunner
  readonly modelTools: (run: RunContext, now: number) => ModelTool[]
  /** A token or cost limit is set: the usage of every model call is counted against it. */
  readonly budgeted: boolean
}

/** A turn as the model sent it, for the transcript and for a checkpoint of the turn in flight. */
export type SentTurn = PendingTurn['response']

// The task in the `run started` line and the stop's message in `run stopped`: invisible characters and
// built-in secret patterns removed, cut at 500.
const startLine = createSanitizer()

/**
 * One run of the agent loop as it goes: its transcript, turns, usage and run context, and what
 * checkpoints, parks, commits and ends it. Made once per run; the loop that drives it is
 * `agentLoop` (agent-loop.ts).
 */
export class AgentRun {
  readonly settings: AgentSettings
  readonly emit: AgentEventSink
  readonly modelTools: LoopShared['modelTools']
  readonly budgeted: boolean
  readonly snapshot: RunSnapshot
  readonly runId: string
  usage: RunUsage
  /** The model has reported no token usage once: warned about it. */
  unreported = false
  readonly log: Logger
  readonly transcript: Message[]
  readonly turns: TurnRecord[]
  /**
   * The run's stop, `run.signal`: it aborts when the caller's signal does or at the first hard error
   * of a turn, so the sibling calls stop too. A run nobody can cancel has none: it runs on the
   * library's never-aborting signal, and a turn of several calls gets a stop of its own
   * (turn-dispatch.ts).
   */
  readonly stopRun: SignalLink | undefined
  readonly run: MutableRun
  /** Nothing is built for a silent logger or an agent without onEvent: the task's sanitizing pass included. */
  readonly logging: boolean
  readonly listened: boolean
  /** Only events carry the run's duration; without a listener they are dropped unbuilt. */
  readonly startedAt: number
  readonly modelEnv: { -readonly [K in keyof ModelCallEnv]: ModelCallEnv[K] }
  /** A run stopped for a person replays its stopped turn first: the same response, no model call. */
  replay: PendingTurn | undefined
  /** The turn being dispatched, so a stop that waits for a person can checkpoint it as it is. */
  inFlight: { turn: number; response: SentTurn } | undefined

  constructor(shared: LoopShared, snapshot: RunSnapshot, signal: AbortSignal | undefined, resumed: boolean) {
    const { settings, emit } = shared
    const { limits, clock, logger } = settings
    this.settings = settings
    this.emit = emit
    this.modelTools = shared.modelTools
    this.budgeted = shared.budgeted
    this.snapshot = snapshot
    const runId = snapshot.runId
    this.runId = runId
    this.usage = usageOfSnapshot(snapshot.usage, runId)
    const log = isSilent(logger) ? silentLogger : logger.child({ runId })
    this.log = log
    this.transcript = [...snapshot.transcript]
    this.turns = [...snapshot.turns]
    const stopRun = signal === undefined ? undefined : new SignalLink(signal)
    this.stopRun = stopRun
    const run = createRun({
      id: runId,
      maxSteps: limits.maxSteps,
      stepsUsed: snapshot.stepsUsed,
      state: snapshot.state,
      turn: snapshot.turn,
      signal: stopRun?.signal,
    })
    this.run = run
    this.logging = log !== silentLogger
    this.listened = emit !== noAgentEvents
    this.startedAt = this.listened ? clock.now() : 0
    if (this.logging) log.info({ task: startLine.text(snapshot.input, 500), limits, resumed }, 'run started')
    if (this.listened) emit({ type: 'run.started', at: this.startedAt, runId, turn: snapshot.turn, resumed, limits })
    this.modelEnv = {
      signal: run.signal,
      clock,
      random: settings.random,
      budget: run.budget,
      log,
      emit,
      within: shared.within,
      runId,
      turn: 0,
    }
    this.replay = snapshot.pendingTurn
    this.inFlight = undefined
  }

  /** Checkpoints the run as it stands, with what the status adds to it; an agent without checkpoints saves nothing. */
  async save(status: RunSnapshot['status'], output?: string, pendingTurn?: PendingTurn, parked?: ParkRecord): Promise<void> {
    const { checkpoints, seal } = this.settings
    if (checkpoints === undefined) return
    const { run, runId } = this
    // Answers go with the turn they answer: a checkpoint that no longer holds a turn waiting for a person holds no answers.
    if (pendingTurn === undefined || parked !== undefined) dropApprovals(run.state)
    const next: RunSnapshot = {
      version: 1,
      runId,
      input: this.snapshot.input,
      status,
      turn: run.turn,
      stepsUsed: run.budget.used,
      state: run.state,
      transcript: this.transcript,
      turns: this.turns,
      usage: this.usage,
      ...(output === undefined ? {} : { output }),
      ...(pendingTurn === undefined ? {} : { pendingTurn }),
      ...(parked === undefined ? {} : { parked }),
    }
    try {
      await checkpoints.save(seal === undefined ? (JSON.parse(JSON.stringify(next)) as RunSnapshot) : seal.seal(next))
    } catch (err) {
      throw checkpointSaveFailed(
        checkpoints,
        runId,
        status === 'parked' ? 'the parked checkpoint' : `the checkpoint of turn ${run.turn}`,
        err,
      )
    }
  }

  /** Back to the last committed turn: the turn in flight does not count. */
  private rewind(): void {
    const { turns } = this
    this.run.turn = turns.length === 0 ? this.snapshot.turn : (turns[turns.length - 1] as TurnRecord).turn
  }

  /**
   * A settled turn with a call that must wait long (park.afterMs or more) is checkpointed as it is
   * and the run returns: the calls that settled are kept, the waiting ones run again on resume.
   * Only a whole settled turn parks, so no call (no write) is ever in flight when it does. Called
   * only for an agent with `park`.
   */
  async parkIfLong(turn: number, response: SentTurn, results: readonly ToolResult[]): Promise<ParkedOutcome | undefined> {
    const park = this.settings.park as ParkSettings
    const tools = this.settings.stack.tools
    const reason = longestWait(results, tools, park)
    if (reason === undefined) return undefined
    const parked = parkRecord(park, reason)
    const kept = keptBesideWaits(results, tools, park, settledCall)
    // The calls that wait for the time to come, named like the calls a stopped turn waits on.
    const until = `waits until ${new Date(parked.wakeAt).toISOString()} (${reason.code})`
    const pending = results
      .filter((result) => !Object.hasOwn(kept, result.callId))
      .map((result) => ({ callId: result.callId, tool: result.name, reason: until }))
    return this.parkAs(parked, { turn, response, results: kept, pending })
  }

  /**
   * Checkpoints the run as parked and returns: `waiting` is the settled turn whose calls wait; without
   * one (the model call waits) the run resumes into its model call. Called only for an agent with `park`.
   */
  async parkAs(parked: ParkRecord, waiting?: PendingTurn): Promise<ParkedOutcome> {
    const { reason } = parked
    const turn = this.run.turn
    this.inFlight = undefined
    this.rewind()
    await this.save('parked', undefined, waiting, parked)
    const { runId, turns, run, usage, transcript } = this
    this.log.info({ outcome: 'parked', turn, wakeAt: parked.wakeAt, ...reason }, 'run parked')
    this.finished('parked', turns.length)
    return { status: 'parked', runId, wakeAt: parked.wakeAt, reason, turns: turns.length, steps: run.budget.used, transcript, usage }
  }

  /** The `run.finished` event (`kind`: the stop's), built only for a listener. */
  private finished(status: 'completed' | 'stopped' | 'parked', turns: number, kind?: string): void {
    if (!this.listened) return
    const at = this.settings.clock.now()
    const fields = { at, runId: this.runId, status, turns, steps: this.run.budget.used, usage: this.usage, durationMs: at - this.startedAt }
    this.emit(kind === undefined ? { type: 'run.finished', ...fields } : { type: 'run.finished', ...fields, kind })
  }

  /**
   * The transcript gets the assistant message and all its results at once, in call order, only
   * when the turn completes: the model never reads half a turn.
   */
  async commitTurn(turn: number, response: SentTurn, results: readonly ToolResult[]): Promise<void> {
    this.inFlight = undefined
    const { transcript } = this
    const calls = response.toolCalls
    transcript.push(
      response.text === undefined
        ? { role: 'assistant', toolCalls: calls }
        : { role: 'assistant', content: response.text, toolCalls: calls },
    )
    let failed = 0
    for (const result of results) {
      if (!result.ok) failed++
      transcript.push({ role: 'tool', callId: result.callId, name: result.name, content: result.content, ok: result.ok })
    }
    this.turns.push(
      response.text === undefined ? { turn, calls: results.map(record) } : { turn, text: response.text, calls: results.map(record) },
    )
    // Layers that watch the run (convergence) see the turn before it is checkpointed; a LoopError ends the run.
    this.settings.stack.observeTurn?.({ turn, text: response.text, calls, results }, this.run)
    await this.save('running')
    if (this.logging) this.log.info({ turn, calls: results.length, failed, steps: this.run.budget.used }, 'turn completed')
  }

  /** The model's final answer, in the transcript and the turns (checkpointed by the caller, then {@link completed}). */
  answered(turn: number, output: string): void {
    this.transcript.push({ role: 'assistant', content: output, toolCalls: [] })
    this.turns.push({ turn, text: output, calls: [] })
  }

  completed(turn: number, output: string): RunOutcome {
    const { runId, run, usage, transcript } = this
    if (this.logging) this.log.info({ outcome: 'completed', turns: turn, steps: run.budget.used, ...usage }, 'run completed')
    this.finished('completed', turn)
    return { status: 'completed', runId, output, turns: turn, steps: run.budget.used, transcript, usage }
  }

  /**
   * The run's outcome after a hard error: checkpointed as stopped, with a turn waiting for a person
   * kept aside. A checkpoint that could not be saved is rethrown instead: the store failed, not the run.
   */
  async stopped(err: unknown): Promise<RunOutcome> {
    const { log, turns, run, runId, usage } = this
    // Not the run's outcome: the store failed, not the run. Nothing is saved over the last good
    // checkpoint (a `stopped` one would end the run for good), and the caller resumes from it.
    if (isCheckpointSaveFailure(err)) {
      log.error({ err, turns: turns.length }, 'run interrupted: its checkpoint could not be saved; resume it once the store is back')
      throw err
    }
    const error = LoopError.is(err)
      ? err
      : new LoopError('tool_crashed', `the agent loop failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
    // The in-flight turn is dropped: only committed turns count. A turn waiting for a person is
    // kept aside, as the model sent it, with the results of the calls that already settled.
    const waiting = this.inFlight !== undefined && isWaiting(err) ? pendingTurnOf(this.inFlight, error) : undefined
    this.rewind()
    await this.save('stopped', undefined, waiting).catch((saveError: unknown) =>
      log.error({ err: saveError }, 'could not checkpoint the stopped run'),
    )
    log.warn(
      {
        outcome: 'stopped',
        kind: error.kind,
        message: startLine.text(error.message, 500),
        turns: turns.length,
        steps: run.budget.used,
        ...usage,
      },
      'run stopped',
    )
    this.finished('stopped', turns.length, error.kind)
    const report = buildReport(runId, this.snapshot.input, turns, error)
    return { status: 'stopped', runId, error, report, usage, turns: turns.length, steps: run.budget.used, transcript: this.transcript }
  }
}
