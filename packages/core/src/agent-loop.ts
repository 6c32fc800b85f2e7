import { type AgentEventSink, type AgentScopeRunner, noAgentEvents } from './agent-events.js'
import type { AgentSettings } from './agent-options.js'
import { dropApprovals } from './approval-binding.js'
import { abortReason } from './channel.js'
import {
  type CallRecord,
  checkpointSaveFailed,
  isCheckpointSaveFailure,
  type ParkReason,
  type ParkRecord,
  type PendingTurn,
  type RunSnapshot,
  type SettledCall,
  type TurnRecord,
} from './checkpoints.js'
import { LoopError, ToolError } from './errors.js'
import { isSilent, silentLogger } from './logger.js'
import type { Message } from './model.js'
import { callModel } from './model-call.js'
import { callModelOnion } from './model-onion.js'
import { modelToolsOf } from './model-tools.js'
import { keptBesideWaits, longestWait } from './park.js'
import { renderError } from './render.js'
import { buildReport, type RunReport } from './report.js'
import { createRun, createRunOn, runSource } from './run.js'
import { RunStop } from './run-stop.js'
import { createSanitizer } from './text/sanitize.js'
import { aloneStop, dispatchTurn, isWaiting, settledBeside } from './turn-dispatch.js'
import type { Json, ToolCall, ToolResult } from './types.js'
import { addUsage, type RunUsage, usageExhausted, usageOfSnapshot } from './usage-budget.js'

export type RunOutcome =
  | {
      readonly status: 'completed'
      readonly runId: string
      readonly output: string
      readonly turns: number
      readonly steps: number
      readonly transcript: readonly Message[]
      /** Tokens and dollars the run's model calls spent, resumed runs included. */
      readonly usage: RunUsage
    }
  | {
      readonly status: 'stopped'
      readonly runId: string
      readonly error: LoopError
      readonly report: RunReport
      readonly turns: number
      readonly steps: number
      readonly transcript: readonly Message[]
      readonly usage: RunUsage
    }

/** A run checkpointed to continue at `wakeAt` (wall-clock epoch ms) with `agent.resume(runId)`; the worker is free. */
export interface ParkedOutcome {
  readonly status: 'parked'
  readonly runId: string
  readonly wakeAt: number
  readonly reason: ParkReason
  /** Completed turns; the parked one is not among them until it completes. */
  readonly turns: number
  readonly steps: number
  readonly transcript: readonly Message[]
  readonly usage: RunUsage
}

/** What an agent created with `park` answers: a {@link RunOutcome}, or a {@link ParkedOutcome}. */
export type ParkingOutcome = RunOutcome | ParkedOutcome

// The task in the `run started` line and the stop's message in `run stopped`: invisible characters and
// built-in secret patterns removed, cut at 500.
const startLine = createSanitizer()

const TRUNCATED = new ToolError(
  'output_truncated',
  'your output was cut off by the output-token limit, so this tool call was not run: its arguments are incomplete',
  { category: 'recoverable', hint: 'send smaller arguments: split the work into several calls, or write less in each one' },
).toJSON()

/** The answers to calls of a reply cut by the output-token limit: none of them ran, the model reads why. */
function truncatedResults(calls: readonly ToolCall[]): ToolResult[] {
  return calls.map((call) => ({
    callId: call.id,
    name: call.name,
    ok: false,
    content: renderError(TRUNCATED, call, {}),
    error: TRUNCATED,
    attempts: 0,
    durationMs: 0,
    replayed: false,
    trace: [],
  }))
}

function settledCall(result: ToolResult): SettledCall {
  const base = {
    callId: result.callId,
    name: result.name,
    ok: result.ok,
    content: result.content,
    attempts: result.attempts,
    replayed: result.replayed,
  }
  return result.error === undefined ? base : { ...base, error: result.error }
}

function record(result: ToolResult): CallRecord {
  const base = { id: result.callId, name: result.name, ok: result.ok, attempts: result.attempts, replayed: result.replayed }
  return result.error === undefined ? base : { ...base, code: result.error.code }
}

/** The checkpointed form of a turn stopped for a person: its calls, what settled, and who waits. */
function pendingTurnOf(inFlight: { turn: number; response: PendingTurn['response'] }, stop: LoopError): PendingTurn {
  const results: Record<string, SettledCall> = {}
  for (const result of settledBeside(stop)) {
    // A call id is the model's text: `__proto__` must be a key like any other.
    Object.defineProperty(results, result.callId, { value: settledCall(result), enumerable: true, writable: true, configurable: true })
  }
  return { turn: inFlight.turn, response: inFlight.response, results, pending: stop.details.pending as Json[] }
}

/** Checkpoints the run as it stands, with what the status adds to it. */
type Save = (status: RunSnapshot['status'], output?: string, pendingTurn?: PendingTurn, parked?: ParkRecord) => Promise<void>

/** An agent without checkpoints saves nothing. */
const saveNothing: Save = async () => {}

/**
 * The agent loop: from a snapshot (a new run's, or a checkpointed one's), asks the model, dispatches
 * its calls, appends the results and checkpoints each completed turn, until the model answers
 * without tool calls or a hard error stops the run. Never rejects for a hard error: it is the outcome.
 * `resumed` says whether the snapshot was loaded from a checkpoint; its turn cannot tell, since a run
 * parked or stopped on its first turn is checkpointed at turn 0.
 */
export function agentLoop(
  settings: AgentSettings,
  emit: AgentEventSink,
  within: AgentScopeRunner,
): (snapshot: RunSnapshot, signal: AbortSignal | undefined, resumed: boolean) => Promise<ParkingOutcome> {
  const { chain, system, modelBreaker, stack, limits, modelRetry, clock, random, logger, checkpoints, seal, park, modelOnion } = settings
  const modelTools = modelToolsOf(stack)
  const budgeted = limits.maxTokens !== undefined || limits.maxCostUsd !== undefined

  return async function drive(snapshot, signal, resumed) {
    const { runId, input } = snapshot
    let usage: RunUsage = usageOfSnapshot(snapshot.usage, runId)
    let unreported = false
    const log = isSilent(logger) ? silentLogger : logger.child({ runId })
    const transcript: Message[] = [...snapshot.transcript]
    const turns: TurnRecord[] = [...snapshot.turns]
    // The run's one signal: the caller's cancellation, or the first hard error of a turn. Every call
    // of the run follows it, never with a signal of its own, and it stays a list of callbacks unless
    // something reads `run.signal` (run-stop.ts). A run nobody can cancel has none: it runs on the
    // library's never-aborting signal, and a turn of several calls gets its own (turn-dispatch.ts),
    // so a hard error still stops the siblings.
    const stopRun = signal === undefined ? undefined : new RunStop(signal)
    const runOptions = { id: runId, maxSteps: limits.maxSteps, stepsUsed: snapshot.stepsUsed, state: snapshot.state, turn: snapshot.turn }
    const run = stopRun === undefined ? createRun(runOptions) : createRunOn(runOptions, stopRun)
    // What the loop and the model call check and follow: the stop itself, so it is not made real for them.
    const runSignal = runSource(run)
    // One for every call of the run: the stack only reads it.
    const dispatchOptions = { run }
    // Nothing is built for a silent logger or an agent without onEvent: the task's sanitizing pass included.
    const logging = log !== silentLogger
    const listened = emit !== noAgentEvents
    // Only events carry the run's duration; without a listener they are dropped unbuilt.
    const startedAt = listened ? clock.now() : 0
    if (logging) log.info({ task: startLine.text(input, 500), limits, resumed }, 'run started')
    if (listened) emit({ type: 'run.started', at: startedAt, runId, turn: snapshot.turn, resumed, limits })
    const modelEnv = {
      signal: runSignal,
      clock,
      random,
      budget: run.budget,
      log,
      timeoutMs: limits.modelTimeoutMs,
      retry: modelRetry,
      breaker: modelBreaker,
      emit,
      within,
      runId,
      turn: 0,
    }
    // A run stopped for a person replays its stopped turn first: the same response, no model call.
    let replay = snapshot.pendingTurn
    // The turn being dispatched, so a stop that waits for a person can checkpoint it as it is.
    let inFlight: { turn: number; response: PendingTurn['response'] } | undefined
    // Neither function exists for an agent without checkpoints (or park): nothing to build per run for them.
    const save: Save =
      checkpoints === undefined
        ? saveNothing
        : async (status, output, pendingTurn, parked) => {
            // Answers go with the turn they answer: a checkpoint that no longer holds a turn waiting for a person holds no answers.
            if (pendingTurn === undefined || parked !== undefined) dropApprovals(run.state)
            const next: RunSnapshot = {
              version: 1,
              runId,
              input,
              status,
              turn: run.turn,
              stepsUsed: run.budget.used,
              state: run.state,
              transcript,
              turns,
              usage,
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
    // A settled turn with a call that must wait long (park.afterMs or more) is checkpointed as it is
    // and the run returns: the calls that settled are kept, the waiting ones run again on resume.
    // Only a whole settled turn parks, so no call (no write) is ever in flight when it does.
    const parkIfLong =
      park === undefined
        ? undefined
        : async (turn: number, response: PendingTurn['response'], results: readonly ToolResult[]): Promise<ParkedOutcome | undefined> => {
            const reason = longestWait(results, stack.tools, park)
            if (reason === undefined) return undefined
            const parkedAt = park.wallNow()
            const parked: ParkRecord = { wakeAt: Math.ceil(parkedAt + reason.waitMs), parkedAt, reason }
            const kept = keptBesideWaits(results, stack.tools, park, settledCall)
            // The calls that wait for the time to come, named like the calls a stopped turn waits on.
            const until = `waits until ${new Date(parked.wakeAt).toISOString()} (${reason.code})`
            const pending = results
              .filter((result) => !Object.hasOwn(kept, result.callId))
              .map((result) => ({ callId: result.callId, tool: result.name, reason: until }))
            const waiting: PendingTurn = { turn, response, results: kept, pending }
            inFlight = undefined
            run.turn = turns.length === 0 ? snapshot.turn : (turns[turns.length - 1] as TurnRecord).turn
            await save('parked', undefined, waiting, parked)
            log.info({ outcome: 'parked', turn, wakeAt: parked.wakeAt, ...reason }, 'run parked')
            emit({
              type: 'run.finished',
              at: clock.now(),
              runId,
              status: 'parked',
              turns: turns.length,
              steps: run.budget.used,
              usage,
              durationMs: clock.now() - startedAt,
            })
            return {
              status: 'parked',
              runId,
              wakeAt: parked.wakeAt,
              reason,
              turns: turns.length,
              steps: run.budget.used,
              transcript,
              usage,
            }
          }
    const turnCompleted = (turn: number, calls: number, failed: number) => {
      if (logging) log.info({ turn, calls, failed, steps: run.budget.used }, 'turn completed')
    }
    // The transcript gets the assistant message and all its results at once, in call order, only
    // when the turn completes: the model never reads half a turn.
    // Not async: a run without checkpoints saves nothing, and an await per turn for nothing is time per turn.
    const commitTurn = (turn: number, response: PendingTurn['response'], results: readonly ToolResult[]): Promise<void> | undefined => {
      inFlight = undefined
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
      turns.push(
        response.text === undefined ? { turn, calls: results.map(record) } : { turn, text: response.text, calls: results.map(record) },
      )
      // Layers that watch the run (convergence) see the turn before it is checkpointed; a LoopError ends the run.
      stack.observeTurn?.({ turn, text: response.text, calls, results }, run)
      if (checkpoints !== undefined) return save('running').then(() => turnCompleted(turn, results.length, failed))
      turnCompleted(turn, results.length, failed)
      return undefined
    }
    try {
      for (;;) {
        if (runSignal.aborted) throw abortReason(runSignal)
        if (run.turn >= limits.maxTurns) {
          throw new LoopError('budget_exhausted', `turn limit reached: ${limits.maxTurns} turns`, {
            details: { maxTurns: limits.maxTurns },
          })
        }
        if (replay !== undefined) {
          // The same turn number, so what the layers recorded for it (the policy's consumed marks) matches.
          const { turn, response, results: kept } = replay
          replay = undefined
          run.turn = turn
          inFlight = { turn, response }
          const replayed = await dispatchTurn(stack, response.toolCalls, run, stopRun, limits.maxParallelToolCalls, kept)
          const parkedAgain = parkIfLong === undefined ? undefined : await parkIfLong(turn, response, replayed)
          if (parkedAgain !== undefined) return parkedAgain
          const saving = commitTurn(turn, response, replayed)
          if (saving !== undefined) await saving
          continue
        }
        const spent = usageExhausted(usage, limits, 'before')
        if (spent !== undefined) throw spent
        const turn = run.turn + 1
        run.turn = turn
        modelEnv.turn = turn
        // One clock reading for the tool list's notes and the first attempt's start.
        const askedAt = clock.now()
        const tools = modelTools(run, askedAt)
        const request = system === undefined ? { messages: transcript, tools } : { messages: transcript, tools, system }
        const { response, link } =
          modelOnion === undefined
            ? await callModel(chain, request, modelEnv, askedAt)
            : await callModelOnion(modelOnion, request, modelEnv, run)
        const calls = response.toolCalls ?? []
        usage = addUsage(usage, response.usage, link.price)
        if (budgeted) {
          if (response.usage === undefined && !unreported) {
            unreported = true
            log.warn({ model: link.name }, 'the model reported no token usage; limits.maxTokens / maxCostUsd cannot count this call')
          }
          // A final answer is in hand and costs nothing more; a turn that would go on is stopped.
          const crossed = calls.length === 0 ? undefined : usageExhausted(usage, limits, 'spent')
          if (crossed !== undefined) throw crossed
        }
        if (calls.length === 0) {
          const output = response.text ?? ''
          transcript.push({ role: 'assistant', content: output, toolCalls: [] })
          turns.push({ turn, text: output, calls: [] })
          if (checkpoints !== undefined) await save('completed', output)
          if (logging) log.info({ outcome: 'completed', turns: turn, steps: run.budget.used, ...usage }, 'run completed')
          if (listened)
            emit({
              type: 'run.finished',
              at: clock.now(),
              runId,
              status: 'completed',
              turns: turn,
              steps: run.budget.used,
              usage,
              durationMs: clock.now() - startedAt,
            })
          return { status: 'completed', runId, output, turns: turn, steps: run.budget.used, transcript, usage }
        }
        // The turn as the model sent it, for the transcript and for a checkpoint of the turn in flight.
        const sent = response.text === undefined ? { toolCalls: calls } : { text: response.text, toolCalls: calls }
        let results: ToolResult[]
        if (response.finishReason === 'length') {
          // Cut by the output-token limit: the arguments are incomplete, so nothing runs. The turn
          // still costs a step, so a model that keeps getting cut off meets the step budget.
          run.budget.spend('output_truncated')
          results = truncatedResults(calls)
          log.warn(
            { turn, calls: calls.length, model: link.name },
            'model output cut by the output-token limit; its tool calls were not run',
          )
        } else {
          inFlight = { turn, response: sent }
          // The stack escalates fatal/user soft errors itself (its `escalate` policy): they reject here.
          if (calls.length === 1) {
            // Most turns: the call dispatched here, with no promise between the stack and this loop.
            let result: ToolResult
            try {
              result = await stack.dispatch(calls[0] as ToolCall, dispatchOptions)
            } catch (err) {
              throw aloneStop(err, stopRun, (calls[0] as ToolCall).id)
            }
            results = [result]
          } else {
            results = await dispatchTurn(stack, calls, run, stopRun, limits.maxParallelToolCalls)
          }
        }
        // Awaited only where there is something to wait for: an agent without park or checkpoints never suspends here.
        const parked = parkIfLong === undefined ? undefined : await parkIfLong(turn, sent, results)
        if (parked !== undefined) return parked
        const saving = commitTurn(turn, sent, results)
        if (saving !== undefined) await saving
      }
    } catch (err) {
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
      const waiting = inFlight !== undefined && isWaiting(err) ? pendingTurnOf(inFlight, error) : undefined
      run.turn = turns.length === 0 ? snapshot.turn : (turns[turns.length - 1] as TurnRecord).turn
      await save('stopped', undefined, waiting).catch((saveError: unknown) =>
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
      emit({
        type: 'run.finished',
        at: clock.now(),
        runId,
        status: 'stopped',
        kind: error.kind,
        turns: turns.length,
        steps: run.budget.used,
        usage,
        durationMs: clock.now() - startedAt,
      })
      return {
        status: 'stopped',
        runId,
        error,
        report: buildReport(runId, input, turns, error),
        usage,
        turns: turns.length,
        steps: run.budget.used,
        transcript,
      }
    } finally {
      stopRun?.close()
    }
  }
}
