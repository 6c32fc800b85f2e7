import { type Alias, Composer, CST, isAlias, isMap, isScalar, isSeq, Lexer, LineCounter, type Pair, Parser, type YAMLMap } from 'yaml'
import { ConfigError, type ConfigIssue } from './config-error.js'
import type { PathKey } from './config-path.js'
import { makeIssue } from './describe-issue.js'
import type { ParsedText } from './json-source.js'
import { fileIssue, MAX_ALIAS_NODES, MAX_DEPTH, tooDeep } from './limits.js'

type Node = { range?: [number, number, number] | null; anchor?: string | undefined } | null | undefined

/** One open collection while the document is converted. */
interface Frame {
  readonly value: Record<string, unknown> | unknown[]
  readonly node: Node
  readonly parent: Frame | undefined
  readonly key: PathKey
  readonly depth: number
  /** Values inside, aliases expanded, and the deepest nesting below: what an alias to this node adds. */
  size: number
  height: number
}

type Job = { readonly enter: Node; readonly parent: Frame | undefined; readonly key: PathKey } | { readonly exit: Frame }

interface Done {
  readonly value: unknown
  readonly size: number
  readonly height: number
}

const FLOW_OPEN = new Set(['{', '['])
const FLOW_CLOSE = new Set(['}', ']'])
const BLOCK_INDICATORS = new Set(['-', '?', ':'])

const countLines = (text: string) => {
  let n = 0
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++
  return n
}

/**
 * Lexes and parses the text into its syntax tree in one pass, stopping early at a flow nesting
 * (`[[[…`) or a line of block indicators (`- - - …`) past {@link MAX_DEPTH}: those cost a few
 * operations per token to count, and no deep tree is ever built for them.
 */
function syntaxTree(text: string, lineCounter: LineCounter): CST.Token[] | ConfigIssue {
  const parser = new Parser(lineCounter.addNewLine)
  lineCounter.addNewLine(0)
  const tokens: CST.Token[] = []
  let flow = 0
  let onLine = 0
  let line = 1
  let scalar = false
  for (const lexeme of new Lexer().lex(text)) {
    if (scalar) {
      scalar = false
      if (lexeme.includes('\n')) line += countLines(lexeme)
    } else if (lexeme === CST.SCALAR) {
      scalar = true
    } else if (FLOW_OPEN.has(lexeme)) {
      if (++flow > MAX_DEPTH) return tooDeep(line)
    } else if (FLOW_CLOSE.has(lexeme)) {
      if (flow > 0) flow--
    } else if (flow === 0 && BLOCK_INDICATORS.has(lexeme)) {
      if (++onLine > MAX_DEPTH) return tooDeep(line)
    } else if (lexeme.includes('\n')) {
      line += countLines(lexeme)
      onLine = 0
    }
    for (const token of parser.next(lexeme)) tokens.push(token)
  }
  for (const token of parser.end()) tokens.push(token)
  return tokens
}

type CstToken = CST.Token & { value?: CST.Token; items?: Array<{ key?: CST.Token | null; value?: CST.Token | null }> }

/** The exact nesting of the syntax tree, walked without recursion. */
function cstDepth(tokens: readonly CST.Token[], lineCounter: LineCounter): ConfigIssue | undefined {
  const stack: Array<[CstToken, number]> = tokens.map((t) => [t as CstToken, 0])
  for (let entry = stack.pop(); entry !== undefined; entry = stack.pop()) {
    const [token, above] = entry
    const collection = token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection'
    const depth = collection ? above + 1 : above
    if (depth > MAX_DEPTH) return tooDeep(lineCounter.linePos((token as { offset: number }).offset).line)
    if (token.value !== undefined) stack.push([token.value as CstToken, depth])
    for (const item of token.items ?? []) {
      if (item.key) stack.push([item.key as CstToken, depth])
      if (item.value) stack.push([item.value as CstToken, depth])
    }
  }
  return undefined
}

const SMALL_MAP = 8

const PROTO_HINT = 'JavaScript reads this key as the object prototype; rename it'

/**
 * Reads a YAML config. Depth is checked before the (recursive) composer runs; the document is then
 * turned into data by one walk without recursion that expands aliases within a budget, reports keys
 * written twice and `__proto__` keys, and indexes every key so lines are found in constant time.
 * Throws a {@link ConfigError} naming `file` for a syntax error, a document nested past
 * {@link MAX_DEPTH}, or aliases that expand past {@link MAX_ALIAS_NODES} values.
 */
export function parseYamlText(text: string, file: string): ParsedText {
  const stop = (issue: ConfigIssue) => new ConfigError(file, [issue])
  const lineCounter = new LineCounter()
  const tokens = syntaxTree(text, lineCounter)
  if (!Array.isArray(tokens)) throw stop(tokens)
  const deep = cstDepth(tokens, lineCounter)
  if (deep !== undefined) throw stop(deep)
  // Keys written twice are found below in linear time; the composer's own check is quadratic.
  const docs = [...new Composer({ uniqueKeys: false }).compose(tokens, true, text.length)]
  const doc = docs[0]
  if (doc === undefined) return { data: null, issues: [], lineOf: () => undefined }
  const lineAt = (offset: number) => lineCounter.linePos(offset).line
  const error = doc.errors[0]
  if (error !== undefined) throw stop(fileIssue(`syntax error: ${error.message.split('\n')[0] ?? ''}`, lineAt(error.pos[0])))
  if (docs.length > 1)
    throw stop(fileIssue('the file holds more than one YAML document (a "---" line); a config is one', lineAt(docs[1]?.range[0] ?? 0)))

  const lineOfNode = (node: Node) => (node?.range ? lineAt(node.range[0]) : undefined)
  const issues: ConfigIssue[] = []
  const keyIndex = new Map<object, Map<string, Pair>>()
  const aliasTarget = new Map<object, Node>()
  const anchors = new Map<string, Node>()
  // Only anchored values are looked up again (by their aliases).
  const done = new Map<object, Done>()
  let aliasNodes = 0
  let root: unknown = null

  const pathOf = (frame: Frame | undefined, key?: PathKey): PathKey[] => {
    const path: PathKey[] = key === undefined ? [] : [key]
    for (let f = frame; f?.parent !== undefined; f = f.parent) path.unshift(f.key)
    return path
  }
  const nameOf = (pair: Pair) => {
    const key = pair.key as { value?: unknown } | null
    return key === null || key.value === null ? '' : String(key.value)
  }
  /** The pair that gives `name` its value: the last one, as in the data. Small maps are scanned; big ones indexed once. */
  const pairOf = (map: YAMLMap, name: string): Pair | undefined => {
    const index = keyIndex.get(map)
    if (index !== undefined) return index.get(name)
    for (let i = map.items.length - 1; i >= 0; i--) if (nameOf(map.items[i] as Pair) === name) return map.items[i] as Pair
    return undefined
  }
  const lineOf = (path: readonly PathKey[]): number | undefined => {
    let node = doc.contents as Node
    let line = lineOfNode(node) ?? 1
    for (const key of path) {
      if (isAlias(node)) node = aliasTarget.get(node)
      if (isMap(node)) {
        const pair = pairOf(node as YAMLMap, String(key))
        if (pair === undefined) return line
        line = lineOfNode(pair.key as Node) ?? line
        node = pair.value as Node
      } else if (isSeq(node) && typeof key === 'number') {
        const item = node.items[key] as Node
        if (item === undefined) return line
        line = lineOfNode(item) ?? line
        node = item
      } else {
        return line
      }
    }
    return line
  }
  const put = (parent: Frame | undefined, key: PathKey, value: unknown, size: number, height: number) => {
    if (parent === undefined) root = value
    else if (Array.isArray(parent.value)) parent.value.push(value)
    else parent.value[key as string] = value
    if (parent === undefined) return
    parent.size += size
    if (height > parent.height) parent.height = height
  }

  const jobs: Job[] = [{ enter: doc.contents as Node, parent: undefined, key: 0 }]
  for (let job = jobs.pop(); job !== undefined; job = jobs.pop()) {
    if ('exit' in job) {
      const frame = job.exit
      const result: Done = { value: frame.value, size: frame.size + 1, height: frame.height + 1 }
      if (frame.node?.anchor !== undefined) done.set(frame.node, result)
      put(frame.parent, frame.key, frame.value, result.size, result.height)
      continue
    }
    const { enter: node, parent, key } = job
    if (node?.anchor !== undefined) anchors.set(node.anchor, node)
    if (isAlias(node)) {
      const target = anchors.get((node as Alias).source)
      const found = target ? done.get(target) : undefined
      const line = lineOfNode(node)
      if (found === undefined) throw stop(fileIssue(`the alias *${(node as Alias).source} refers to a value that contains it`, line))
      aliasNodes += found.size
      if (aliasNodes > MAX_ALIAS_NODES) {
        throw stop(
          fileIssue(
            `YAML aliases expand to more than ${MAX_ALIAS_NODES} values`,
            line,
            'an alias bomb ("billion laughs")? write the values out, or use a policy under policies:',
          ),
        )
      }
      if ((parent?.depth ?? 0) + found.height > MAX_DEPTH) throw stop(tooDeep(line))
      aliasTarget.set(node as object, target)
      put(parent, key, found.value, found.size, found.height)
      continue
    }
    if (!isMap(node) && !isSeq(node)) {
      const value = isScalar(node) ? node.value : null
      if (node?.anchor !== undefined) done.set(node, { value, size: 1, height: 0 })
      put(parent, key, value, 1, 0)
      continue
    }
    const frame: Frame = {
      value: isMap(node) ? {} : [],
      node,
      parent,
      key,
      depth: (parent?.depth ?? 0) + 1,
      size: 0,
      height: 0,
    }
    jobs.push({ exit: frame })
    if (isSeq(node)) {
      for (let i = node.items.length - 1; i >= 0; i--) jobs.push({ enter: node.items[i] as Node, parent: frame, key: i })
      continue
    }
    const items = (node as YAMLMap).items
    // Most maps hold a few keys, where a scan beats building an index.
    const seen = items.length > SMALL_MAP ? new Map<string, Pair>() : undefined
    if (seen !== undefined) keyIndex.set(node, seen)
    const children: Job[] = []
    for (const [i, pair] of items.entries()) {
      const keyNode = pair.key as Node
      if (keyNode !== null && !isScalar(keyNode)) {
        issues.push(
          makeIssue(pathOf(frame), () => lineOfNode(keyNode), { message: 'a key must be plain text, not a list, an object or an alias' }),
        )
        continue
      }
      const name = nameOf(pair)
      const at = () => lineOfNode(keyNode)
      if (name === '__proto__') {
        issues.push(makeIssue(pathOf(frame, name), at, { message: 'a key named "__proto__"', received: name, hint: PROTO_HINT }))
        continue
      }
      const first = seen !== undefined ? seen.get(name) : items.slice(0, i).find((p) => nameOf(p) === name)
      if (first !== undefined) {
        issues.push(
          makeIssue(pathOf(frame, name), at, {
            message: `"${name}" is written twice in the same object (first on line ${lineOfNode(first.key as Node)})`,
            received: name,
            hint: 'keep one; the last would silently win',
          }),
        )
      }
      seen?.set(name, pair)
      children.push({ enter: pair.value as Node, parent: frame, key: name })
    }
    for (let i = children.length - 1; i >= 0; i--) jobs.push(children[i] as Job)
  }
  return { data: root, issues, lineOf }
}
