import { type Alias, isAlias, isMap, isScalar, isSeq, type Pair, type YAMLMap } from 'yaml'
import type { ConfigError, ConfigIssue } from './config-error.js'
import type { PathKey } from './config-path.js'
import { makeIssue } from './describe-issue.js'
import { fileIssue, MAX_ALIAS_NODES, MAX_DEPTH, tooDeep } from './limits.js'

/** A node of the composed YAML document, as far as the walk reads it. */
export type Node = { range?: [number, number, number] | null; anchor?: string | undefined } | null | undefined

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

const SMALL_MAP = 8

const PROTO_HINT = 'JavaScript reads this key as the object prototype; rename it'

const nameOf = (pair: Pair) => {
  const key = pair.key as { value?: unknown } | null
  return key === null || key.value === null ? '' : String(key.value)
}

/**
 * Turns a composed YAML document into data by one walk without recursion: expands aliases within a
 * budget, reports keys written twice and `__proto__` keys, and indexes every big map's keys so a
 * path's line is found in constant time. Throws what `stop` makes of an alias bomb, a cycle or a
 * document nested past {@link MAX_DEPTH}.
 *
 * @example
 * const walk = new YamlWalk(doc.contents, lineAt, stop)
 * walk.run()
 * walk.root // the data
 */
export class YamlWalk {
  root: unknown = null
  readonly issues: ConfigIssue[] = []
  private readonly keyIndex = new Map<object, Map<string, Pair>>()
  private readonly aliasTarget = new Map<object, Node>()
  private readonly anchors = new Map<string, Node>()
  /** Only anchored values are looked up again (by their aliases). */
  private readonly done = new Map<object, Done>()
  private aliasNodes = 0
  private readonly contents: Node
  private readonly lineAt: (offset: number) => number
  private readonly stop: (issue: ConfigIssue) => ConfigError

  constructor(contents: Node, lineAt: (offset: number) => number, stop: (issue: ConfigIssue) => ConfigError) {
    this.contents = contents
    this.lineAt = lineAt
    this.stop = stop
  }

  run(): void {
    const jobs: Job[] = [{ enter: this.contents, parent: undefined, key: 0 }]
    for (let job = jobs.pop(); job !== undefined; job = jobs.pop()) {
      if ('exit' in job) this.exit(job.exit)
      else if (isAlias(job.enter)) this.alias(job.enter as Alias, job.parent, job.key)
      else if (isMap(job.enter) || isSeq(job.enter)) this.collection(job.enter, job.parent, job.key, jobs)
      else {
        const { enter: node, parent, key } = job
        if (node?.anchor !== undefined) this.anchors.set(node.anchor, node)
        const value = isScalar(node) ? node.value : null
        if (node?.anchor !== undefined) this.done.set(node, { value, size: 1, height: 0 })
        this.put(parent, key, value, 1, 0)
      }
    }
  }

  /** The line of the value at `path`, or of the nearest key above it that is there. */
  lineOf(path: readonly PathKey[]): number | undefined {
    let node = this.contents
    let line = this.lineOfNode(node) ?? 1
    for (const key of path) {
      if (isAlias(node)) node = this.aliasTarget.get(node)
      if (isMap(node)) {
        const pair = this.pairOf(node as YAMLMap, String(key))
        if (pair === undefined) return line
        line = this.lineOfNode(pair.key as Node) ?? line
        node = pair.value as Node
      } else if (isSeq(node) && typeof key === 'number') {
        const item = node.items[key] as Node
        if (item === undefined) return line
        line = this.lineOfNode(item) ?? line
        node = item
      } else {
        return line
      }
    }
    return line
  }

  private lineOfNode(node: Node): number | undefined {
    return node?.range ? this.lineAt(node.range[0]) : undefined
  }

  /** The pair that gives `name` its value: the last one, as in the data. Small maps are scanned; big ones indexed once. */
  private pairOf(map: YAMLMap, name: string): Pair | undefined {
    const index = this.keyIndex.get(map)
    if (index !== undefined) return index.get(name)
    for (let i = map.items.length - 1; i >= 0; i--) if (nameOf(map.items[i] as Pair) === name) return map.items[i] as Pair
    return undefined
  }

  private put(parent: Frame | undefined, key: PathKey, value: unknown, size: number, height: number): void {
    if (parent === undefined) {
      this.root = value
      return
    }
    if (Array.isArray(parent.value)) parent.value.push(value)
    else parent.value[key as string] = value
    parent.size += size
    if (height > parent.height) parent.height = height
  }

  /** A collection is complete: its value goes into its parent, and an anchored one is kept for its aliases. */
  private exit(frame: Frame): void {
    const result: Done = { value: frame.value, size: frame.size + 1, height: frame.height + 1 }
    if (frame.node?.anchor !== undefined) this.done.set(frame.node, result)
    this.put(frame.parent, frame.key, frame.value, result.size, result.height)
  }

  /** An alias: the value of its anchor, counted against the alias budget and the depth limit. */
  private alias(node: Alias, parent: Frame | undefined, key: PathKey): void {
    if (node.anchor !== undefined) this.anchors.set(node.anchor, node)
    const target = this.anchors.get(node.source)
    const found = target ? this.done.get(target) : undefined
    const line = this.lineOfNode(node)
    if (found === undefined) throw this.stop(fileIssue(`the alias *${node.source} refers to a value that contains it`, line))
    this.aliasNodes += found.size
    if (this.aliasNodes > MAX_ALIAS_NODES) {
      throw this.stop(
        fileIssue(
          `YAML aliases expand to more than ${MAX_ALIAS_NODES} values`,
          line,
          'an alias bomb ("billion laughs")? write the values out, or use a policy under policies:',
        ),
      )
    }
    if ((parent?.depth ?? 0) + found.height > MAX_DEPTH) throw this.stop(tooDeep(line))
    this.aliasTarget.set(node, target)
    this.put(parent, key, found.value, found.size, found.height)
  }

  /** A map or a list: a frame for its value, and a job per item, in order. */
  private collection(node: NonNullable<Node>, parent: Frame | undefined, key: PathKey, jobs: Job[]): void {
    if (node.anchor !== undefined) this.anchors.set(node.anchor, node)
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
      return
    }
    const children = this.entries(node as YAMLMap, frame)
    for (let i = children.length - 1; i >= 0; i--) jobs.push(children[i] as Job)
  }

  /** A map's entries to walk, with a problem reported for each key that is not plain text, `__proto__`, or written twice. */
  private entries(map: YAMLMap, frame: Frame): Job[] {
    const items = map.items
    // Most maps hold a few keys, where a scan beats building an index.
    const seen = items.length > SMALL_MAP ? new Map<string, Pair>() : undefined
    if (seen !== undefined) this.keyIndex.set(map, seen)
    const children: Job[] = []
    for (const [i, pair] of items.entries()) {
      const keyNode = pair.key as Node
      if (keyNode !== null && !isScalar(keyNode)) {
        this.issues.push(
          makeIssue(pathOf(frame), () => this.lineOfNode(keyNode), {
            message: 'a key must be plain text, not a list, an object or an alias',
          }),
        )
        continue
      }
      const name = nameOf(pair)
      const at = () => this.lineOfNode(keyNode)
      if (name === '__proto__') {
        this.issues.push(makeIssue(pathOf(frame, name), at, { message: 'a key named "__proto__"', received: name, hint: PROTO_HINT }))
        continue
      }
      const first = seen !== undefined ? seen.get(name) : items.slice(0, i).find((p) => nameOf(p) === name)
      if (first !== undefined) {
        this.issues.push(
          makeIssue(pathOf(frame, name), at, {
            message: `"${name}" is written twice in the same object (first on line ${this.lineOfNode(first.key as Node)})`,
            received: name,
            hint: 'keep one; the last would silently win',
          }),
        )
      }
      seen?.set(name, pair)
      children.push({ enter: pair.value as Node, parent: frame, key: name })
    }
    return children
  }
}

function pathOf(frame: Frame | undefined, key?: PathKey): PathKey[] {
  const path: PathKey[] = key === undefined ? [] : [key]
  for (let f = frame; f?.parent !== undefined; f = f.parent) path.unshift(f.key)
  return path
}
