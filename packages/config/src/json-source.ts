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
  const scanner = new JsonScan(text, issues, protoPaths)
  for (;;) {
    if (scanner.value()) continue
    const root = scanner.afterValue()
    if (root !== undefined) return root
  }
}

/**
 * The one pass over a JSON text, without recursion: a stack of the objects and lists open at the
 * cursor. `value()` reads one value and `afterValue()` what may follow it, until the text ends.
 */
class JsonScan {
  private i = 0
  private line = 1
  private readonly frames: Frame[] = []
  private root: LineNode | undefined
  private readonly text: string
  private readonly issues: ConfigIssue[]
  private readonly protoPaths: PathKey[][]

  constructor(text: string, issues: ConfigIssue[], protoPaths: PathKey[][]) {
    this.text = text
    this.issues = issues
    this.protoPaths = protoPaths
  }

  /** Reads one value; true when it opened an object or list with something inside, whose first value comes next. */
  value(): boolean {
    const { text, frames } = this
    this.space()
    const frame = frames[frames.length - 1]
    const at = frame !== undefined && frame.node.keys !== undefined ? frame.keyLine : this.line
    const c = text[this.i]
    if (c === '{' || c === '[') {
      if (frames.length >= MAX_DEPTH) throw new ConfigError(undefined, [tooDeep(this.line)])
      const node: LineNode = c === '{' ? { line: at, keys: new Map() } : { line: at, items: [] }
      this.attach(node)
      const close = c === '{' ? '}' : ']'
      this.i++
      this.space()
      if (text[this.i] === close) {
        this.i++
        return false
      }
      const opened: Frame = { node, at: 0, keyLine: this.line }
      frames.push(opened)
      if (node.keys !== undefined) this.key(opened)
      return true
    }
    if (c === '"') {
      this.string()
    } else {
      NUMBER.lastIndex = this.i
      const word = WORDS.find((w) => text.startsWith(w, this.i))
      if (NUMBER.test(text)) this.i = NUMBER.lastIndex
      else if (word !== undefined) this.i += word.length
      else if (c === "'") throw new Stop(this.line, 'a string in single quotes; JSON wants double quotes')
      else this.expect('a value')
    }
    this.attach({ line: at })
    return false
  }

  /**
   * After a value: a comma (then `undefined`, another value comes), the end of the enclosing object or
   * list, or the end of the text (then the root's lines).
   */
  afterValue(): LineNode | undefined {
    const { text, frames } = this
    for (;;) {
      const top = frames[frames.length - 1]
      this.space()
      if (top === undefined) {
        if (this.i < text.length) throw new Stop(this.line, 'more text after the end of the JSON value')
        if (this.root === undefined) this.expect('a value')
        return this.root as LineNode
      }
      const object = top.node.keys !== undefined
      const close = object ? '}' : ']'
      if (text[this.i] === ',') {
        this.i++
        this.space()
        if (text[this.i] === close) throw new Stop(this.line, `a trailing comma before "${close}"`)
        if (object) this.key(top)
        else top.at = (top.node.items as LineNode[]).length
        return undefined
      }
      if (text[this.i] !== close) this.expect(`"," or "${close}"`)
      this.i++
      frames.pop()
    }
  }

  private space(): void {
    const { text } = this
    for (; this.i < text.length; this.i++) {
      const c = text.charCodeAt(this.i)
      if (c === 10) this.line++
      else if (c !== 32 && c !== 9 && c !== 13) return
    }
  }

  private expect(what: string): never {
    const { text, i } = this
    throw new Stop(
      this.line,
      i >= text.length ? `the file ends where ${what} was expected` : `expected ${what}, found ${JSON.stringify(text[i])}`,
    )
  }

  private string(): string {
    const { text } = this
    const start = this.i++
    const startLine = this.line
    for (; this.i < text.length && text[this.i] !== '"'; this.i++) {
      if (text.charCodeAt(this.i) < 0x20) throw new Stop(this.line, 'a line break or control character inside a string')
      if (text[this.i] === '\\') this.i++
    }
    if (this.i >= text.length) throw new Stop(startLine, 'a string that never ends (a missing ")')
    this.i++
    return text.slice(start, this.i)
  }

  private path(): PathKey[] {
    return this.frames.map((f) => f.at)
  }

  /** An object's member name and its colon; a `__proto__` key or one written twice is reported. */
  private key(frame: Frame): void {
    const { text } = this
    this.space()
    if (text[this.i] !== '"') this.expect('a property name in double quotes')
    const keyLine = this.line
    const raw = this.string()
    let name: string
    try {
      name = JSON.parse(raw) as string
    } catch {
      throw new Stop(keyLine, `a property name with an invalid escape: ${raw}`)
    }
    this.space()
    if (text[this.i] !== ':') this.expect('":" after the property name')
    this.i++
    frame.at = name
    frame.keyLine = keyLine
    const keys = frame.node.keys as Map<string, LineNode>
    if (name === '__proto__') {
      this.protoPaths.push(this.path())
      this.issues.push(makeIssue(this.path(), () => keyLine, { message: 'a key named "__proto__"', received: name, hint: PROTO_HINT }))
    } else if (keys.has(name)) {
      const first = keys.get(name)?.line
      this.issues.push(
        makeIssue(this.path(), () => keyLine, {
          message: `"${name}" is written twice in the same object (first on line ${first})`,
          received: name,
          hint: 'keep one; JSON would silently use the last',
        }),
      )
    }
  }

  private attach(node: LineNode): void {
    const frame = this.frames[this.frames.length - 1]
    if (frame === undefined) this.root = node
    else if (frame.node.keys !== undefined) frame.node.keys.set(frame.at as string, node)
    else frame.node.items?.push(node)
  }
}
