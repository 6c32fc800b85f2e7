/** What main.ts tells a worker at start (argv[2], JSON). */
export interface WorkerConfig {
  readonly port: number
  /** The file where every side effect appends one line. */
  readonly effects: string
  readonly leaseMs: number
  readonly holdMs: number
  readonly cooldownMs: number
}

/** One command line on a worker's stdin: `calls` dispatches of one tool call, at once or one by one. */
export interface WorkerCommand {
  readonly id: string
  readonly tool: 'charge_card' | 'search'
  readonly args: Record<string, unknown>
  readonly calls?: number
  readonly sequential?: boolean
  /** Makes each call's `order` distinct (`order-i`), for throughput runs. */
  readonly distinct?: boolean
  readonly runId?: string
  /** Switches the search upstream down or up for this and later commands. */
  readonly upstreamDown?: boolean
  /** How long the tools hold before answering, for this command. */
  readonly holdMs?: number
}

/** What a worker answers for one call. */
export interface CallSummary {
  readonly ok: boolean
  readonly replayed: boolean
  readonly code: string | undefined
  readonly retryAfterMs: number | undefined
  /** Wall time of the dispatch in the worker. */
  readonly ms: number
  readonly events: readonly string[]
}
