import { nanoid } from 'nanoid'
import { agentEvents, agentScope, noScope } from './agent-events.js'
import { agentLoop, type RunOutcome } from './agent-loop.js'
import { type AgentModel, type AgentOptions, agentSettings } from './agent-options.js'
import { type ApprovalAnswer, resumeOptions, withApprovals } from './approvals.js'
import type { RunSnapshot } from './checkpoints.js'
import type { Stack } from './stack.js'
import { usageOfSnapshot } from './usage-budget.js'

export type { AgentEvent, AgentEventListener, AgentScope } from './agent-events.js'
export type { RunOutcome } from './agent-loop.js'
export type { AgentLimits, AgentModel, AgentOptions } from './agent-options.js'
export { APPROVALS_STATE_KEY, type ApprovalAnswer } from './approvals.js'

export interface Agent {
  readonly stack: Stack
  /** Runs a task to completion or to a hard stop. Never rejects for hard errors: they are in the outcome. */
  run(options: { input: string; signal?: AbortSignal; runId?: string }): Promise<RunOutcome>
  /**
   * Continues a checkpointed run at its next turn; completed turns are never re-run. A run stopped
   * for approval replays its stopped turn's calls (no new model call) with `approvals` answering
   * the pending calls by id: `'approve'`, `'deny'`, `{ deny: reason }` or `{ args }` (edited arguments).
   */
  resume(runId: string, options?: ResumeOptions): Promise<RunOutcome>
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
 * // A fallback chain with a system prompt and a token budget:
 * createAgent({ model: [gpt, claude], system: 'Be brief.', tools: [readFile], limits: { maxTokens: 200_000 } })
 */
export function createAgent(options: AgentOptions<AgentModel>): Agent {
  const settings = agentSettings(options)
  const { stack, checkpoints } = settings
  const within = agentScope(settings.logger, settings.onEvent)
  const loop = agentLoop(settings, agentEvents(settings.logger, settings.onEvent), within)
  // The whole run inside the listener's context, so what the model and the tools start sees it.
  const drive =
    within === noScope
      ? loop
      : (snapshot: RunSnapshot, signal: AbortSignal | undefined) =>
          within({ type: 'run', at: settings.clock.now(), runId: snapshot.runId }, () => loop(snapshot, signal))

  return {
    stack,
    async run({ input, signal, runId }) {
      if (typeof input !== 'string') throw new TypeError('agent.run(): input must be a string (the task)')
      const snapshot: RunSnapshot = {
        version: 1,
        runId: runId ?? nanoid(12),
        input,
        status: 'running',
        turn: 0,
        stepsUsed: 0,
        state: {},
        transcript: [{ role: 'user', content: input }],
        turns: [],
      }
      if (checkpoints !== undefined) await checkpoints.save(snapshot)
      return drive(snapshot, signal)
    },
    async resume(runId, options = {}) {
      const { signal, approvals } = resumeOptions(options)
      if (checkpoints === undefined)
        throw new TypeError('agent.resume(): this agent has no checkpoints store; pass createAgent({ checkpoints })')
      const snapshot = await checkpoints.load(runId)
      if (snapshot === undefined) throw new TypeError(`agent.resume(): no checkpoint for run "${runId}"`)
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
      if (approvals === undefined) return drive(snapshot, signal)
      const answered = withApprovals(snapshot, approvals)
      // Saved before the replay: a process that dies during it resumes with the answers given.
      await checkpoints.save(answered)
      return drive(answered, signal)
    },
  }
}
