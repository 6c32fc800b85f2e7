import { Composer, CST, Lexer, LineCounter, Parser } from 'yaml'
import { ConfigError, type ConfigIssue } from './config-error.js'
import type { ParsedText } from './json-source.js'
import { fileIssue, MAX_DEPTH, tooDeep } from './limits.js'
import { type Node, YamlWalk } from './yaml-walk.js'

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

  const walk = new YamlWalk(doc.contents as Node, lineAt, stop)
  walk.run()
  return { data: walk.root, issues: walk.issues, lineOf: (path) => walk.lineOf(path) }
}
