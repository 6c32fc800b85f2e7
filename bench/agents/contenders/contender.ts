import type { BenchTool, Task } from '../tasks.js'

/** What a contender gets for one episode. */
export interface EpisodeSetup {
  readonly task: Task
  readonly tools: readonly BenchTool[]
  /** The model name to ask for: the endpoint routes it to this episode's brain. */
  readonly model: string
  /** The fake provider's root URL (`http://127.0.0.1:port`). */
  readonly url: string
  /** Aborted when the episode is declared hung. */
  readonly signal: AbortSignal
}

/** How an episode ended, from the caller's side. */
export type RunEnd =
  | { readonly kind: 'answered'; readonly text: string }
  /** A documented stop the caller is handed as a value or a typed error (shallot's `LoopError`). */
  | { readonly kind: 'stopped'; readonly reason: string }

export interface Contender {
  readonly id: string
  readonly label: string
  /** The page whose recommended setup this contender follows. */
  readonly follows: string
  run(setup: EpisodeSetup): Promise<RunEnd>
}
