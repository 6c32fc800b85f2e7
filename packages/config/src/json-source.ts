import { ConfigError, type ConfigIssue } from './config-error.js'
import type { PathKey } from './config-path.js'
import { makeIssue } from './describe-issue.js'
import { fileIssue, MAX_DEPTH, tooDeep } from './limits.js'

/** A parsed text: its data, where each value was written, and the problems found while reading it. */
export interface ParsedText {
  readonly data: unknown
  readonly lineOf: (path: readonly PathKey[]) => number | undefined
  /** Problems that do not stop reading (a key written twice, a `__proto__` key), reported with the rest. */
  readonly issues: readonly ConfigIssue[]
}

/** Where each value of a JSON text starts: its key's line in an object, its own line in a list. */
interface LineNode {
  readonly line: number
  readonly keys?: Map<string, LineNode>
  readonly items?: LineNode[]
}

interface Frame {
  readonly node: LineNode
  /** The key or index the next value goes under. */
  at: PathKey
  /** The line of that key, for a member of an object. */
  keyLine: number
}

class Stop extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message)
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const WORDS = ['true', 'false', 'null'] as const

/**
 * Reads a JSON config. One pass without recursion checks the syntax (giving the line of the first
 * mistake, which `JSON.parse` does not always tell), the depth, and repeated or `__proto__` keys, and
 * records the line of every value; `JSON.parse` then builds the data. Throws a {@link ConfigError}
 * naming `file` for a syntax error or a document nested past {@link MAX_DEPTH}.
 */
export function parseJsonText(text: string, file: string): ParsedText {
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  const issues: ConfigIssue[] = []
  const protoPaths: PathKey[][] = []
  let root: LineNode | undefined
  try {
    root = scan(source, issues, protoPaths)
  } catch (err) {
    if (err instanceof Stop) throw new ConfigError(file, [fileIssue(`syntax error: ${err.message}`, err.line)])
    if (ConfigError.is(err)) throw new ConfigError(file, err.issues)
    throw err
  }
  let data: unknown
  try {
    data = JSON.parse(source)
  } catch (err) {
    throw new ConfigError(file, [fileIssue(`syntax error: ${(err as Error).message.split('\n')[0] ?? ''}`)])
  }
  for (const path of protoPaths) dropKey(data, path)
  const tree = root
  return { data, issues, lineOf: (path) => lineIn(tree, path) }
}

/** Removes the own property at `path` (a `__proto__` key JSON.parse kept), so no later step reads it. */
export function dropKey(data: unknown, path: readonly PathKey[]): void {
  let node = data
  for (const key of path.slice(0, -1)) {
    if (typeof node !== 'object' || node === null) return
    node = (node as Record<PathKey, unknown>)[key]
  }
  if (typeof node === 'object' && node !== null) delete (node as Record<PathKey, unknown>)[path[path.length - 1] as PathKey]
}

function lineIn(root: LineNode, path: readonly PathKey[]): number {
  let node = root
  let line = root.line
  for (const key of path) {
    const child = node.keys !== undefined ? node.keys.get(String(key)) : typeof key === 'number' ? node.items?.[key] : undefined
    if (child === undefined) return line
    line = child.line
    node = child
  }
  return line
}

const PROTO_HINT = 'JavaScript reads this key as the object prototype; rename it'

function scan(text: string, issues: ConfigIssue[], protoPaths: PathKey[][]): LineNode {
  let i = 0
  let line = 1
  const frames: Frame[] = []
  let root: LineNode | undefined

  const space = () => {
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (c === 10) line++
      else if (c !== 32 && c !== 9 && c !== 13) return
    }
  }
  const expect = (what: string): never => {
    throw new Stop(
      line,
      i >= text.length ? `the file ends where ${what} was expected` : `expected ${what}, found ${JSON.stringify(text[i])}`,
    )
  }
  const string = (): string => {
    const start = i++
    const startLine = line
    for (; i < text.length && text[i] !== '"'; i++) {
      if (text.charCodeAt(i) < 0x20) throw new Stop(line, 'a line break or control character inside a string')
      if (text[i] === '\\') i++
    }
    if (i >= text.length) throw new Stop(startLine, 'a string that never ends (a missing ")')
    i++
    return text.slice(start, i)
  }
  const path = () => frames.map((f) => f.at)

  const key = (frame: Frame) => {
    space()
    if (text[i] !== '"') expect('a property name in double quotes')
    const keyLine = line
    const raw = string()
    let name: string
    try {
      name = JSON.parse(raw) as string
    } catch {
      throw new Stop(keyLine, `a property name with an invalid escape: ${raw}`)
    }
    space()
    if (text[i] !== ':') expect('":" after the property name')
    i++
    frame.at = name
    frame.keyLine = keyLine
    const keys = frame.node.keys as Map<string, LineNode>
    if (name === '__proto__') {
      protoPaths.push(path())
      issues.push(makeIssue(path(), () => keyLine, { message: 'a key named "__proto__"', received: name, hint: PROTO_HINT }))
    } else if (keys.has(name)) {
      const first = keys.get(name)?.line
      issues.push(
        makeIssue(path(), () => keyLine, {
          message: `"${name}" is written twice in the same object (first on line ${first})`,
          received: name,
          hint: 'keep one; JSON would silently use the last',
        }),
      )
    }
  }

  const attach = (node: LineNode) => {
    const frame = frames[frames.length - 1]
    if (frame === undefined) root = node
    else if (frame.node.keys !== undefined) frame.node.keys.set(frame.at as string, node)
    else frame.node.items?.push(node)
  }

  value: for (;;) {
    space()
    const frame = frames[frames.length - 1]
    const at = frame !== undefined && frame.node.keys !== undefined ? frame.keyLine : line
    const c = text[i]
    if (c === '{' || c === '[') {
      if (frames.length >= MAX_DEPTH) throw new ConfigError(undefined, [tooDeep(line)])
      const node: LineNode = c === '{' ? { line: at, keys: new Map() } : { line: at, items: [] }
      attach(node)
      const close = c === '{' ? '}' : ']'
      i++
      space()
      if (text[i] === close) {
        i++
      } else {
        const opened: Frame = { node, at: 0, keyLine: line }
        frames.push(opened)
        if (node.keys !== undefined) key(opened)
        continue
      }
    } else {
      if (c === '"') {
        string()
      } else {
        NUMBER.lastIndex = i
        const word = WORDS.find((w) => text.startsWith(w, i))
        if (NUMBER.test(text)) i = NUMBER.lastIndex
        else if (word !== undefined) i += word.length
        else if (c === "'") throw new Stop(line, 'a string in single quotes; JSON wants double quotes')
        else expect('a value')
      }
      attach({ line: at })
    }
    // After a value: a comma, the end of the enclosing object or list, or the end of the text.
    for (;;) {
      const top = frames[frames.length - 1]
      space()
      if (top === undefined) {
        if (i < text.length) throw new Stop(line, 'more text after the end of the JSON value')
        if (root === undefined) expect('a value')
        return root as LineNode
      }
      const object = top.node.keys !== undefined
      const close = object ? '}' : ']'
      if (text[i] === ',') {
        i++
        space()
        if (text[i] === close) throw new Stop(line, `a trailing comma before "${close}"`)
        if (object) key(top)
        else top.at = (top.node.items as LineNode[]).length
        continue value
      }
      if (text[i] !== close) expect(`"," or "${close}"`)
      i++
      frames.pop()
    }
  }
}
