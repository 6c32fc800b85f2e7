import type { AgentEvent } from '@shallot/agent'
import type { Clock, StackEvent } from '@shallot/core'
import { sanitize } from '@shallot/core'
import type { StatusStream } from '../cli-io.js'
import { terminalText } from '../terminal-text.js'

export type { StatusStream } from '../cli-io.js'

/** A tool call running this long gets a wait of its own: how long it has been running. */
export const LONG_CALL_MS = 2000
const TICK_MS = 1000
const CLEAR = '\r\x1b[2K'

interface Wait {
  /** The line, given the clock's time now. */
  readonly text: (now: number) => string
  readonly stop: AbortController
}

/** `run`'s timeline printer and event listeners, with the waits shown as they start. */
export interface WaitLines {
  /** Prints a timeline line: the live line is taken down first and drawn again after. */
  out(line: string): void
  agentEvent(event: AgentEvent): void
  stackEvent(event: StackEvent): void
  /** A run that parks: one plain `wait  parked …` line, live line or not (the process is about to end). */
  parked(why: string, restMs: number): void
  /** A parked run resumed a little early: the rest the agent waits out, counted down until the run goes on. */
  waking(why: string, restMs: number): void
  /** Ends every wait and its timers, and clears the live line; a later event starts new ones. */
  close(): void
}

export interface WaitLinesOptions {
  out: (line: string) => void
  /** A terminal gets one live line, rewritten in place; without one (or with TERM=dumb), each wait is a plain line as it starts. */
  stream?: StatusStream | undefined
  clock: Clock
  env?: NodeJS.ProcessEnv
  /** The model's name in the lines (`openai:gpt-4o-mini`); default the name the agent gives it. */
  model?: string
  /** Redacted from what a provider or a tool says, with the built-in patterns. */
  secrets?: readonly string[]
}

/** ` (of 3)` for an event that names the attempts allowed; nothing for one that does not, or a value that is no count. */
const ofMax = (max: unknown) => (typeof max === 'number' && Number.isInteger(max) && max > 0 ? ` (of ${max})` : '')
/** The outage budget a model retry is riding out, when its event names one; last on the line, the first part a narrow terminal cuts. */
const budgetOf = (budgetMs: unknown) =>
  typeof budgetMs === 'number' && Number.isFinite(budgetMs) && budgetMs > 0
    ? `; within a ${Math.round(budgetMs / 1000)} s outage budget`
    : ''

const secondsOf = (ms: number) => `${(Math.max(0, ms) / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`

/** Runs `then` after `ms` on the clock unless `signal` aborts first (an aborted sleep is no error here). */
function later(clock: WaitLinesOptions['clock'], ms: number, signal: AbortSignal, then: () => void): void {
  clock.sleep(Math.max(0, ms), signal).then(then, () => {})
}

/** One line of the live waits, cut to the terminal's width; a terminal that reports no width (0: a pty nobody sized,
 * as `script` opens) is taken as 80 columns. */
function liveLine(texts: string[], columns: number | undefined, dim: boolean): string {
  const width = Math.max(20, (columns !== undefined && columns > 0 ? columns : 80) - 1)
  const chars = Array.from(`wait  ${texts.join(' · ')}`)
  const text = terminalText(chars.length > width ? `${chars.slice(0, width - 1).join('')}…` : chars.join(''))
  return dim ? `\x1b[2m${text}\x1b[0m` : text
}

/** Why a tool call waits: the event's own status and Retry-After (retry names them), a classifier's for an older retry. */
function retryWhy(
  f: Record<string, unknown>,
  tool: string,
  seen: { status?: unknown; retryAfterMs?: unknown } | undefined,
  clean: (text: string) => string,
): string {
  const statusOf = typeof f.status === 'number' ? f.status : seen?.status
  const afterMs = typeof f.retryAfterMs === 'number' ? f.retryAfterMs : seen?.retryAfterMs
  const status = typeof statusOf === 'number' && Number.isFinite(statusOf) ? `HTTP ${statusOf} ` : ''
  const after = typeof afterMs === 'number' && Number.isFinite(afterMs) ? `, Retry-After ${secondsOf(afterMs)}` : ''
  return `before attempt ${Number(f.attempt)}${ofMax(f.maxAttempts)} of ${tool}: ${status}${clean(String(f.code))}${after}`
}

/**
 * Shows each wait of a run as it starts: a model retry with its reason (status, `Retry-After`), a
 * tool retry's delay (with the status and `Retry-After` the error classifier saw), a tool call
 * running past {@link LONG_CALL_MS}. On a terminal one line counts down or up in place and is
 * cleared when no wait is left; elsewhere each wait is one plain line. Driven by the events the
 * agent (`model.retry`, `model.call`) and the stack (`retry.scheduled`, `call.started`,
 * `call.finished`) already emit.
 *
 * @example
 * const waits = waitLines({ out: console.log, stream: process.stdout, clock: systemClock })
 * createAgent({ model, tools, onEvent: waits.agentEvent }).stack.on(waits.stackEvent)
 */
export function waitLines(options: WaitLinesOptions): WaitLines {
  const { clock } = options
  const secrets = [...(options.secrets ?? [])]
  const clean = (text: string) => sanitize(text, { secrets, maxLength: 300 }).replace(/\s+/g, ' ')
  const line = new LiveLine(options)
  const start = (key: string, text: (now: number) => string, untilMs?: number) => line.start(key, text, untilMs)
  const end = (key: string) => line.end(key)
  const print = (text: string) => line.print(text)

  // The status and Retry-After of each call's last classified error, for its retry's line.
  const classified = new Map<number, { status?: unknown; retryAfterMs?: unknown }>()
  const longCalls = new Map<number, AbortController>()

  return {
    out: print,
    agentEvent(event) {
      if (event.type === 'model.retry') {
        const until = clock.now() + event.delayMs
        // The countdown comes first: a narrow terminal cuts the end of the line, never the part that moves.
        // retry()'s model event names its bound (attempts, or an outage budget); core's own does not (yet).
        const bound = event as { maxAttempts?: unknown; outageBudgetMs?: unknown }
        const of = ofMax(bound.maxAttempts)
        const why = `before attempt ${event.attempt + 1}${of} of the model ${clean(options.model ?? event.model)}: ${clean(event.error)}${budgetOf(bound.outageBudgetMs)}`
        start('model', (now) => `${secondsOf(until - now)} ${why}`, until)
      } else if (event.type === 'model.call' || event.type === 'model.fallback' || event.type === 'run.finished') {
        end('model')
        end('park')
      } else if (event.type === 'run.started') {
        end('park')
      }
    },
    stackEvent(event) {
      const seq = event.callSeq
      const f = event as unknown as Record<string, unknown>
      if (event.type === 'call.started') {
        const stop = new AbortController()
        longCalls.set(seq, stop)
        const started = clock.now()
        const tool = clean(event.tool)
        later(clock, LONG_CALL_MS, stop.signal, () => {
          longCalls.delete(seq)
          start(`call:${seq}`, (now) => `${tool} running for ${secondsOf(now - started)}`)
        })
      } else if (event.type === 'error-classifier.classified') {
        classified.set(seq, { status: f.status, retryAfterMs: f.retryAfterMs })
      } else if (event.type === 'retry.scheduled') {
        const delayMs = Number(f.delayMs)
        const until = clock.now() + (Number.isFinite(delayMs) ? delayMs : 0)
        const why = retryWhy(f, clean(event.tool), classified.get(seq), clean)
        start(`retry:${seq}`, (now) => `${secondsOf(until - now)} ${why}`, until)
      } else if (event.type === 'call.finished') {
        longCalls.get(seq)?.abort()
        longCalls.delete(seq)
        classified.delete(seq)
        end(`call:${seq}`)
        end(`retry:${seq}`)
      }
    },
    parked(why, restMs) {
      print(`wait  parked for ${secondsOf(restMs)}: ${clean(why)}`)
    },
    waking(why, restMs) {
      const until = clock.now() + restMs
      start('park', (now) => `${secondsOf(until - now)} until the parked run wakes: ${clean(why)}`, until)
    },
    close() {
      for (const stop of longCalls.values()) stop.abort()
      longCalls.clear()
      line.close()
    },
  }
}

/**
 * The waits shown now, as one live line a terminal rewrites in place (redrawn every second while
 * one is shown), or without a terminal as a plain line each as it starts.
 */
class LiveLine {
  private readonly waits = new Map<string, Wait>()
  private drawn = false
  private ticking: AbortController | undefined
  private live: boolean
  private readonly dim: boolean
  private readonly options: WaitLinesOptions

  constructor(options: WaitLinesOptions) {
    const { env = process.env, stream } = options
    this.options = options
    this.live = stream?.isTTY === true && env.TERM !== 'dumb'
    this.dim = this.live && env.NO_COLOR === undefined && env.FORCE_COLOR !== '0'
  }

  /** Starts a wait: drawn live, or printed once; one with an `until` ends by itself then. */
  start(key: string, text: (now: number) => string, untilMs?: number): void {
    const { clock } = this.options
    this.waits.get(key)?.stop.abort()
    const wait: Wait = { text, stop: new AbortController() }
    this.waits.set(key, wait)
    if (untilMs !== undefined)
      later(clock, untilMs - clock.now(), wait.stop.signal, () => {
        if (this.waits.get(key) === wait) this.end(key)
      })
    if (this.live) this.draw()
    else this.options.out(`wait  ${text(clock.now())}`)
  }

  end(key: string): void {
    const wait = this.waits.get(key)
    if (wait === undefined) return
    this.waits.delete(key)
    wait.stop.abort()
    if (this.waits.size === 0) {
      this.ticking?.abort()
      this.ticking = undefined
    }
    this.draw()
  }

  /** A line of the timeline: the live line is taken down first and drawn again after. */
  print(line: string): void {
    if (this.drawn) {
      this.write(CLEAR)
      this.drawn = false
    }
    this.options.out(line)
    if (this.waits.size > 0) this.draw()
  }

  /** Ends every wait and its timers, and clears the live line. */
  close(): void {
    for (const wait of this.waits.values()) wait.stop.abort()
    this.waits.clear()
    this.ticking?.abort()
    this.ticking = undefined
    if (this.drawn) this.write(CLEAR)
    this.drawn = false
  }

  private write(text: string): void {
    try {
      this.options.stream?.write(text)
    } catch {
      // A terminal that went away (EPIPE): the waits go on as plain lines.
      this.live = false
    }
  }

  private draw(): void {
    if (!this.live) return
    if (this.waits.size === 0) {
      if (this.drawn) this.write(CLEAR)
      this.drawn = false
      return
    }
    const { clock, stream } = this.options
    this.write(
      `${CLEAR}${liveLine(
        [...this.waits.values()].reverse().map((w) => w.text(clock.now())),
        stream?.columns,
        this.dim,
      )}`,
    )
    this.drawn = true
    if (this.ticking === undefined) this.tick()
  }

  /** Redraws every second while a wait is shown: the countdown and the elapsed time move. */
  private tick(): void {
    const stop = new AbortController()
    this.ticking = stop
    later(this.options.clock, TICK_MS, stop.signal, () => {
      this.ticking = undefined
      this.draw()
    })
  }
}
