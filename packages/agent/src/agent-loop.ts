import { abortReason, LoopError, type ModelResponse, type ToolCall, type ToolResult } from '@shallot/core'
import type { AgentEventSink, AgentScopeRunner } from './agent-events.js'
import type { AgentSettings } from './agent-options.js'
import type { ParkedOutcome, ParkingOutcome } from './agent-outcome.js'
import { AgentRun, type LoopShared, type SentTurn } from './agent-run.js'
import { truncatedResults } from './agent-turn-records.js'
import type { PendingTurn, RunSnapshot } from './checkpoints.js'
import type { ModelLink } from './model-link.js'
import { callModelOnion } from './model-onion.js'
import { modelToolsOf } from './model-tools.js'
import { modelPark } from './park.js'
import { dispatchTurn } from './turn-dispatch.js'
import { addUsage, usageExhausted } from './usage-budget.js'

export type { ParkedOutcome, ParkingOutcome, RunOutcome } from './agent-outcome.js'

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
  const { limits, stack } = settings
  const shared: LoopShared = {
    settings,
    emit,
    within,
    modelTools: modelToolsOf(stack),
    budgeted: limits.maxTokens !== undefined || limits.maxCostUsd !== undefined,
  }
  return async function drive(snapshot, signal, resumed) {
    return driveRun(new AgentRun(shared, snapshot, signal, resumed))
  }
}

/** Turns until the model answers, the run parks, or a hard error stops it (the outcome, never a rejection). */
async function driveRun(r: AgentRun): Promise<ParkingOutcome> {
  const { stack, limits, park, checkpoints } = r.settings
  const { run, stopRun } = r
  try {
    for (;;) {
      if (run.signal.aborted) throw abortReason(run.signal)
      if (run.turn >= limits.maxTurns) {
        throw new LoopError('budget_exhausted', `turn limit reached: ${limits.maxTurns} turns`, {
          details: { maxTurns: limits.maxTurns },
        })
      }
      if (r.replay !== undefined) {
        const parkedAgain = await replayTurn(r, r.replay)
        if (parkedAgain !== undefined) return parkedAgain
        continue
      }
      const spent = usageExhausted(r.usage, limits, 'before')
      if (spent !== undefined) throw spent
      const turn = run.turn + 1
      run.turn = turn
      r.modelEnv.turn = turn
      const { response, link } = await askModel(r)
      const calls = response.toolCalls ?? []
      spend(r, response, link, calls.length)
      if (calls.length === 0) {
        const output = response.text ?? ''
        r.answered(turn, output)
        if (checkpoints !== undefined) await r.save('completed', output)
        return r.completed(turn, output)
      }
      // The turn as the model sent it, for the transcript and for a checkpoint of the turn in flight.
      const sent: SentTurn = response.text === undefined ? { toolCalls: calls } : { text: response.text, toolCalls: calls }
      let results: ToolResult[]
      if (response.finishReason === 'length') results = truncated(r, turn, calls, link)
      else {
        r.inFlight = { turn, response: sent }
        // The stack escalates fatal/user soft errors itself (its `escalate` policy): they reject here.
        results = await dispatchTurn({ stack, run, stopRun, maxParallel: limits.maxParallelToolCalls }, calls)
      }
      const parked = park === undefined ? undefined : await r.parkIfLong(turn, sent, results)
      if (parked !== undefined) return parked
      await r.commitTurn(turn, sent, results)
    }
  } catch (err) {
    // The model call waits long with no turn begun (none in flight): parked, it is asked again on wake.
    const parked = park === undefined || r.inFlight !== undefined ? undefined : modelPark(err, park)
    return await (parked === undefined ? r.stopped(err) : r.parkAs(parked).catch((saveFailure: unknown) => r.stopped(saveFailure)))
  } finally {
    stopRun?.release()
  }
}

/** A run stopped for a person dispatches its stopped turn again: the same response, no model call. */
async function replayTurn(r: AgentRun, replay: PendingTurn): Promise<ParkedOutcome | undefined> {
  const { stack, limits, park } = r.settings
  // The same turn number, so what the layers recorded for it (the policy's consumed marks) matches.
  const { turn, response, results: kept } = replay
  r.replay = undefined
  r.run.turn = turn
  r.inFlight = { turn, response }
  const place = { stack, run: r.run, stopRun: r.stopRun, maxParallel: limits.maxParallelToolCalls }
  const replayed = await dispatchTurn(place, response.toolCalls, kept)
  const parkedAgain = park === undefined ? undefined : await r.parkIfLong(turn, response, replayed)
  if (parkedAgain !== undefined) return parkedAgain
  await r.commitTurn(turn, response, replayed)
  return undefined
}

/** Asks the model for the next turn, through the agent's model onion (its layers around one attempt). */
function askModel(r: AgentRun): Promise<{ response: ModelResponse; link: ModelLink }> {
  const { system, modelOnion, clock } = r.settings
  const tools = r.modelTools(r.run, clock.now())
  const request = system === undefined ? { messages: r.transcript, tools } : { messages: r.transcript, tools, system }
  return callModelOnion(modelOnion, request, r.modelEnv, r.run)
}

/** Counts the model call's tokens and cost; a turn that would go on past a token or cost limit is stopped. */
function spend(r: AgentRun, response: ModelResponse, link: ModelLink, calls: number): void {
  r.usage = addUsage(r.usage, response.usage, link.price)
  if (!r.budgeted) return
  if (response.usage === undefined && !r.unreported) {
    r.unreported = true
    r.log.warn({ model: link.name }, 'the model reported no token usage; limits.maxTokens / maxCostUsd cannot count this call')
  }
  // A final answer is in hand and costs nothing more; a turn that would go on is stopped.
  const crossed = calls === 0 ? undefined : (usageExhausted(r.usage, r.settings.limits, 'spent') ?? unpriced(r, response, link))
  if (crossed !== undefined) throw crossed
}

/**
 * A model a layer asked instead of the agent's own (a fallback's spare) that has no price: its tokens
 * would cost $0 and the cost budget would never stop the run, so a turn that would go on is stopped.
 */
function unpriced(r: AgentRun, response: ModelResponse, link: ModelLink): LoopError | undefined {
  const { maxCostUsd } = r.settings.limits
  if (maxCostUsd === undefined || link.price !== undefined || response.usage === undefined) return undefined
  return new LoopError('budget_exhausted', `limits.maxCostUsd cannot count model '${link.name}': it has no price`, {
    details: {
      maxCostUsd,
      model: link.name,
      fix: `add prices['${link.name}'] = { inputPerMTokUsd, outputPerMTokUsd } to createAgent's options`,
    },
  })
}

/**
 * Cut by the output-token limit: the arguments are incomplete, so nothing runs. The turn still
 * costs a step, so a model that keeps getting cut off meets the step budget.
 */
function truncated(r: AgentRun, turn: number, calls: readonly ToolCall[], link: ModelLink): ToolResult[] {
  r.run.budget.spend('output_truncated')
  const results = truncatedResults(calls)
  r.log.warn({ turn, calls: calls.length, model: link.name }, 'model output cut by the output-token limit; its tool calls were not run')
  return results
}
