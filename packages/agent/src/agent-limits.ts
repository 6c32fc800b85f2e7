// A leaf file: agent-events.ts names the limits in run.started, and agent-options.ts imports agent-events.ts.

export interface AgentLimits {
  /** Model turns per run. Default 20. */
  maxTurns: number
  /** Steps per run: every model call and every tool attempt (retries included) spends one. Default 100. */
  maxSteps: number
  /** Tool calls of one turn that run at once. Default 4. */
  maxParallelToolCalls: number
  /**
   * Tokens per run, input plus output as the providers report them. The run stops as
   * `budget_exhausted` right after the model call that goes past it. Default: no limit.
   */
  maxTokens?: number | undefined
  /** US dollars per run, from `prices`; the run stops right after the call that goes past it. Default: no limit. */
  maxCostUsd?: number | undefined
}
