import { extname } from 'node:path'
import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, type Node, parseDocument } from 'yaml'
import { ConfigError } from './config-error.js'
import { jsonSyntaxError } from './json-syntax-error.js'

/** One step of a path into the document: an object key or a list index. */
export type PathKey = string | number

/** A parsed config document, and where each of its values was written. */
export interface ConfigSource {
  /** Absolute path of the file; `undefined` for a config given as an object. */
  readonly file: string | undefined
  /** The document as plain data. */
  readonly data: unknown
  /** The line of the value at `path` (of its key, for a value in an object), or of the nearest ancestor written in the file. */
  lineOf(path: readonly PathKey[]): number | undefined
}

const IDENTIFIER = /^[A-Za-z_$][\w$-]*$/

/**
 * `['stack', 3, 'retry', 'baseMs']` → `stack[3].retry.baseMs`; keys that are not plain names are quoted.
 *
 * @example
 * formatPath(['stack', 2, '@acme/rate-limit', 'rps']) // 'stack[2]["@acme/rate-limit"].rps'
 */
export function formatPath(path: readonly PathKey[]): string {
  let text = ''
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`
    else if (IDENTIFIER.test(key)) text += text === '' ? key : `.${key}`
    else text += `[${JSON.stringify(key)}]`
  }
  return text
}

const noLines = () => undefined

/**
 * A config given as an object: no file, no lines.
 *
 * @example
 * objectSource({ stack: ['retry'] }).lineOf(['stack', 0]) // undefined
 */
export function objectSource(data: unknown): ConfigSource {
  return { file: undefined, data, lineOf: noLines }
}

function syntaxError(file: string, line: number | undefined, message: string): ConfigError {
  return new ConfigError(file, [
    { path: '', line, message: `syntax error: ${message}`, received: undefined, allowed: undefined, hint: undefined },
  ])
}

function lineAt(text: string, offset: number): number {
  let line = 1
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++
  return line
}

function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text)
  } catch (err) {
    const found = jsonSyntaxError(text)
    if (found !== undefined) throw syntaxError(file, lineAt(text, found.offset), found.message)
    throw syntaxError(file, undefined, err instanceof Error ? (err.message.split('\n')[0] ?? '') : String(err))
  }
}

/**
 * Parses a config file's text: JSON for `.json`, YAML for anything else. A syntax error is a
 * {@link ConfigError} with the line; nothing else is checked here.
 *
 * @example
 * const source = parseSource(await readFile(file, 'utf8'), file)
 * source.lineOf(['stack', 3, 'retry']) // 12
 */
export function parseSource(text: string, file: string): ConfigSource {
  const json = extname(file).toLowerCase() === '.json'
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true })
  let data: unknown
  if (json) {
    data = parseJson(text, file)
  } else {
    const error = doc.errors[0]
    if (error !== undefined) throw syntaxError(file, error.linePos?.[0].line, error.message.replace(/ at line \d+, column \d+:?.*$/s, ''))
    data = doc.toJS({ maxAliasCount: 100 })
  }
  // JSON parsed by the YAML parser only serves to find lines; if it disagrees, lines are simply missing.
  const lines = doc.errors.length === 0
  const lineOfNode = (node: { range?: [number, number, number] | null | undefined } | null | undefined) =>
    node?.range ? lineCounter.linePos(node.range[0]).line : undefined

  function lineOf(path: readonly PathKey[]): number | undefined {
    if (!lines) return undefined
    let node: unknown = doc.contents
    let line = lineOfNode(doc.contents as Node | null) ?? 1
    for (const key of path) {
      if (isAlias(node)) node = node.resolve(doc)
      if (isMap(node)) {
        const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && String(item.key.value) === String(key))
        if (pair === undefined) return line
        line = lineOfNode(pair.key as Node) ?? line
        node = pair.value
      } else if (isSeq(node) && typeof key === 'number') {
        const item = node.items[key]
        if (item === undefined) return line
        line = lineOfNode(item as Node) ?? line
        node = item
      } else {
        return line
      }
    }
    return line
  }

  return { file, data, lineOf }
}
