import { relative, sep } from 'node:path'
import { escapeControls } from '@shallot/core/kit'

/** One problem in a config: where it is, what was there and what would be accepted. */
export interface ConfigIssue {
  /** Dotted path into the document, like `stack[3].retry.baseMs`; `''` for the document itself. */
  readonly path: string
  /** 1-based line in the file, when the file and the format tell. */
  readonly line: number | undefined
  /** What the problem is, without the location: `expected a number ≥ 0, got "fast"`. */
  readonly message: string
  /** The value found, as JSON text (cut at 60 characters); `undefined` when the value is missing. */
  readonly received: string | undefined
  /** What would be accepted, in words. */
  readonly allowed: string | undefined
  /** A likely fix, like `did you mean 'retry'?`. */
  readonly hint: string | undefined
}

/**
 * How a file appears in messages: relative to the working directory when inside it, else absolute.
 *
 * @example
 * displayFile(join(process.cwd(), 'shallot.yaml')) // 'shallot.yaml'
 */
export function displayFile(file: string | undefined): string {
  if (file === undefined) return 'config'
  const rel = relative(process.cwd(), file)
  return rel === '' || rel.startsWith(`..${sep}`) || rel === '..' ? file : rel
}

function format(file: string | undefined, issue: ConfigIssue): string {
  const name = escapeControls(displayFile(file), { oneLine: true })
  const where = issue.line === undefined ? name : `${name}:${issue.line}`
  return issue.path === '' ? `${where}: ${issue.message}` : `${where}: ${issue.path}: ${issue.message}`
}

const oneLine = (text: string | undefined) => (text === undefined ? undefined : escapeControls(text, { oneLine: true }))

/** An issue whose texts quote what the file held: a key or a value never adds a line or drives a terminal. */
function quoted(issue: ConfigIssue): ConfigIssue {
  return {
    path: escapeControls(issue.path, { oneLine: true }),
    line: issue.line,
    message: escapeControls(issue.message, { oneLine: true }),
    received: oneLine(issue.received),
    allowed: oneLine(issue.allowed),
    hint: oneLine(issue.hint),
  }
}

/**
 * A config file (or object) that cannot be used: names the file, the line, the path, the value
 * received and what is allowed. The message is one line per problem and never holds a stack trace;
 * keys and values from the file are quoted, their control characters shown as escapes (`\x1b`, `\n`):
 * `shallot.yaml:12: stack[3].retry.baseMs: expected a number ≥ 0, got "fast"`.
 * The fields describe the first problem; `issues` holds them all.
 *
 * @example
 * try {
 *   await loadConfig('shallot.yaml')
 * } catch (err) {
 *   if (ConfigError.is(err)) console.error(err.message) // shallot.yaml:4: stack[1]: unknown middleware "retyr"; did you mean 'retry'?
 * }
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
  readonly code = 'invalid_config'
  /** Absolute path of the file, or `undefined` for a config given as an object. */
  readonly file: string | undefined
  readonly line: number | undefined
  readonly path: string
  readonly received: string | undefined
  readonly allowed: string | undefined
  readonly hint: string | undefined
  readonly issues: readonly ConfigIssue[]

  constructor(file: string | undefined, given: readonly ConfigIssue[], options?: { cause?: unknown }) {
    if (given.length === 0) throw new TypeError('ConfigError needs at least one issue')
    const issues = given.map(quoted)
    super(issues.map((issue) => format(file, issue)).join('\n'), options)
    const first = issues[0] as ConfigIssue
    this.file = file
    this.line = first.line
    this.path = first.path
    this.received = first.received
    this.allowed = first.allowed
    this.hint = first.hint
    this.issues = issues
  }

  /** True for a ConfigError from any installed copy of this package. */
  static is(value: unknown): value is ConfigError {
    return value instanceof Error && value.name === 'ConfigError' && (value as { code?: unknown }).code === 'invalid_config'
  }
}
