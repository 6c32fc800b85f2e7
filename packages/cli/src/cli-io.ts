import type { Clock } from '@shallot/core'

/** Where `run` draws its live wait line: a terminal (`process.stdout`), or anything else, which gets plain lines. */
export interface StatusStream {
  write(text: string): unknown
  readonly isTTY?: boolean
  readonly columns?: number
}

/** What the CLI prints to and reads from: a leaf every command imports, so none of them imports `cli.ts` back. */
export interface CliIO {
  out: (line: string) => void
  err: (line: string) => void
  /** Whether `err` is a terminal: there `sim` redraws one progress bar, elsewhere it prints a line per cell. */
  errIsTerminal?: boolean
  /** Where `run` and `resume` read a person's answers to calls waiting for approval. */
  input?: NodeJS.ReadableStream
  /** Whether `input` is a terminal: there `run` asks (y / n / edit); elsewhere it stops and prints the `shallot resume` command. */
  inputIsTerminal?: boolean
  /**
   * Where `run` shows its waits (a model retry, a tool retry, a long tool call) as one live line: the
   * terminal `out` prints to. When it is not a TTY (or absent), each wait is a plain line of `out`.
   */
  status?: StatusStream
  /** The clock a run waits on; default the system's. Tests pass `manualClock()` from @shallot/testing. */
  clock?: Clock
}
