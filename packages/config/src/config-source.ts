import { extname } from 'node:path'
import { ConfigError, type ConfigIssue } from './config-error.js'
import type { PathKey } from './config-path.js'
import { parseJsonText } from './json-source.js'
import { bytesText, DEFAULT_MAX_BYTES, fileIssue } from './limits.js'
import { plainData } from './plain-data.js'
import { parseYamlText } from './yaml-source.js'

export { formatPath, type PathKey } from './config-path.js'

/** A parsed config document, and where each of its values was written. */
export interface ConfigSource {
  /** Absolute path of the file; `undefined` for a config given as an object. */
  readonly file: string | undefined
  /** The document as plain data. */
  readonly data: unknown
  /** The line of the value at `path` (of its key, for a value in an object), or of the nearest ancestor written in the file. */
  lineOf(path: readonly PathKey[]): number | undefined
  /** Problems found while reading (a key written twice, a `__proto__` key), reported with the rest. */
  readonly issues?: readonly ConfigIssue[]
}

const noLines = () => undefined

/**
 * A config given as an object: no file, no lines. The object is checked as plain data (depth,
 * prototypes) and copied, so later changes to it change nothing.
 *
 * @example
 * objectSource({ stack: ['retry'] }).lineOf(['stack', 0]) // undefined
 */
export function objectSource(data: unknown): ConfigSource {
  return { file: undefined, data: plainData(data), lineOf: noLines, issues: [] }
}

export interface ParseSourceOptions {
  /** The largest text accepted, in bytes (UTF-8). Default 1 MiB. */
  maxBytes?: number
}

/**
 * Parses a config file's text: JSON for `.json`, YAML for anything else. Neither parse recurses,
 * a document may nest 64 levels, and YAML aliases are expanded within a budget. A syntax error, a
 * text over `maxBytes`, or a document too deep is a {@link ConfigError} naming the file; keys
 * written twice and `__proto__` keys are in `issues`, reported with the rest. Nothing else is checked here.
 *
 * @example
 * const source = parseSource(await readFile(file, 'utf8'), file)
 * source.lineOf(['stack', 3, 'retry']) // 12
 */
export function parseSource(text: string, file: string, options: ParseSourceOptions = {}): ConfigSource {
  const maxBytes = checkMaxBytes(options.maxBytes)
  // A UTF-8 byte is at most one UTF-16 unit, so most texts pass without counting their bytes.
  if (text.length > maxBytes || (text.length * 3 > maxBytes && Buffer.byteLength(text, 'utf8') > maxBytes)) {
    throw tooBig(file, Buffer.byteLength(text, 'utf8'), maxBytes)
  }
  const parsed = extname(file).toLowerCase() === '.json' ? parseJsonText(text, file) : parseYamlText(text, file)
  return { file, ...parsed }
}

/** The error for a file over the size cap, before anything reads it. */
export function tooBig(file: string, bytes: number, maxBytes: number): ConfigError {
  return new ConfigError(file, [
    fileIssue(
      `the file is ${bytesText(bytes)}, over the ${bytesText(maxBytes)} a config may have`,
      undefined,
      'a config is a few kilobytes; raise maxBytes if this one really is that large',
    ),
  ])
}

/** `maxBytes` as given, or the default; a bad value is a TypeError naming the option. */
export function checkMaxBytes(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_BYTES
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`maxBytes: expected a whole number of bytes ≥ 1, got ${String(value)}`)
  }
  return value
}
