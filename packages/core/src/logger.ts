import type { Logger } from './types.js'

const nothing = () => {}

/**
 * A logger that writes nothing: `child()` returns itself.
 *
 * @example
 * createStack({ tools, logger: silentLogger })
 */
export const silentLogger: Logger = { debug: nothing, info: nothing, warn: nothing, error: nothing, child: () => silentLogger }

type Method = 'debug' | 'info' | 'warn' | 'error' | 'child'

/** What a logger and all its children share: which methods already failed (each is reported once). */
class Failures {
  readonly #reported = new Set<Method>()
  readonly #root: Logger

  constructor(root: Logger) {
    this.#root = root
  }

  report(method: Method, err: unknown): void {
    if (this.#reported.has(method)) return
    this.#reported.add(method)
    const text = `logger.${method}() threw (${err instanceof Error ? `${err.name}: ${err.message}` : typeof err}); shallot drops what it cannot write and carries on`
    if (method !== 'error') {
      try {
        this.#root.error({ err, method }, text)
        return
      } catch {
        // The logger cannot say it either: tell the process instead.
      }
    }
    if (typeof process !== 'undefined' && typeof process.emitWarning === 'function') {
      process.emitWarning(text, { code: 'SHALLOT_LOGGER_FAILED' })
    }
  }
}

/** A logger whose methods never throw into the call that logs: a line a broken logger cannot write is dropped. */
class GuardedLogger implements Logger {
  readonly #inner: Logger
  readonly #failures: Failures

  constructor(inner: Logger, failures: Failures) {
    this.#inner = inner
    this.#failures = failures
  }

  /** Whether the wrapped logger writes nothing at all now (pino's level `silent`); read on each call, since a level can change. */
  get silent(): boolean {
    try {
      return (this.#inner as { level?: unknown }).level === 'silent'
    } catch {
      return false
    }
  }

  debug(obj: object, msg?: string): void {
    try {
      msg === undefined ? this.#inner.debug(obj) : this.#inner.debug(obj, msg)
    } catch (err) {
      this.#failures.report('debug', err)
    }
  }

  info(obj: object, msg?: string): void {
    try {
      msg === undefined ? this.#inner.info(obj) : this.#inner.info(obj, msg)
    } catch (err) {
      this.#failures.report('info', err)
    }
  }

  warn(obj: object, msg?: string): void {
    try {
      msg === undefined ? this.#inner.warn(obj) : this.#inner.warn(obj, msg)
    } catch (err) {
      this.#failures.report('warn', err)
    }
  }

  error(obj: object, msg?: string): void {
    try {
      msg === undefined ? this.#inner.error(obj) : this.#inner.error(obj, msg)
    } catch (err) {
      this.#failures.report('error', err)
    }
  }

  child(bindings: Record<string, unknown>): Logger {
    let child: Logger
    try {
      child = this.#inner.child(bindings)
    } catch (err) {
      this.#failures.report('child', err)
      // Lines without the child's bindings beat no lines at all.
      return this
    }
    return typeof child === 'object' && child !== null ? new GuardedLogger(child, this.#failures) : this
  }
}

/**
 * Whether `logger` writes nothing now: the silent logger, or a guarded pino-compatible logger whose
 * `level` is `'silent'`. The stack then gives a call no child logger of its own.
 *
 * @example
 * isSilent(guardLogger(pino({ level: 'silent' }))) // true
 */
export function isSilent(logger: Logger): boolean {
  return logger === silentLogger || (logger instanceof GuardedLogger && logger.silent)
}

/**
 * Wraps a pino-compatible logger so no method can throw into the code that logs: logging is
 * never a reason for a tool call to fail. Each method that throws is reported once, through the
 * logger's `error` if that still works, else as a process warning (`SHALLOT_LOGGER_FAILED`).
 * The silent logger and loggers already guarded are returned as they are.
 *
 * @example
 * const log = guardLogger(pino())
 * log.info({ tool: 'search' }, 'tool call') // never throws, whatever the transport does
 */
export function guardLogger(logger: Logger): Logger {
  if (logger === silentLogger || logger instanceof GuardedLogger) return logger
  return new GuardedLogger(logger, new Failures(logger))
}
