const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype'])
const MAX_DEPTH = 32
const MAX_NODES = 10_000
/** As much as a call's arguments may weigh by default (the stack's `maxArgsBytes`), counted as JSON characters. */
const MAX_CHARS = 256 * 1024

class Refused {
  constructor(readonly problem: string) {}
}

/**
 * Edited arguments copied once into plain JSON, or why they cannot go to a tool. Answers from a
 * person arrive from a snapshot or a UI callback, not through the stack's own guard: each value is
 * read exactly once (a getter cannot answer one thing to the check and another to the tool), and a
 * getter or Proxy that throws makes the arguments refused, never a crash.
 *
 * @example
 * plainCopy({ amountCents: Number.NaN }) // { ok: false, problem: 'amountCents is not a finite number' }
 */
export function plainCopy(value: unknown): { ok: true; value: unknown } | { ok: false; problem: string } {
  let nodes = 0
  let chars = 0
  const grow = (by: number) => {
    chars += by
    if (chars > MAX_CHARS) throw new Refused(`they are over ${MAX_CHARS} characters as JSON`)
  }
  const walk = (node: unknown, path: string, depth: number): unknown => {
    if (++nodes > MAX_NODES) throw new Refused(`more than ${MAX_NODES} values`)
    if (depth > MAX_DEPTH) throw new Refused(`${path || 'the arguments'} nest deeper than ${MAX_DEPTH} levels`)
    if (typeof node === 'string') {
      grow(node.length + 2)
      return node
    }
    if (node === null || typeof node === 'boolean') {
      grow(5)
      return node
    }
    if (typeof node === 'number') {
      if (!Number.isFinite(node)) throw new Refused(`${path || 'the value'} is not a finite number`)
      grow(24)
      return node
    }
    if (Array.isArray(node)) {
      const length = node.length
      grow(2 + length)
      const copy: unknown[] = []
      for (let i = 0; i < length; i++) copy.push(walk(node[i], `${path}[${i}]`, depth + 1))
      return copy
    }
    const proto = typeof node === 'object' ? Object.getPrototypeOf(node) : undefined
    if (proto !== Object.prototype && proto !== null) throw new Refused(`${path || 'the arguments'} is not plain JSON (${typeof node})`)
    const copy: Record<string, unknown> = {}
    for (const key of Object.keys(node as object)) {
      if (FORBIDDEN.has(key)) throw new Refused(`${path ? `${path}.` : ''}${key} is not an allowed argument name`)
      grow(key.length + 4)
      copy[key] = walk((node as Record<string, unknown>)[key], path ? `${path}.${key}` : key, depth + 1)
    }
    return copy
  }
  try {
    return { ok: true, value: walk(value, '', 0) }
  } catch (err) {
    if (err instanceof Refused) return { ok: false, problem: err.problem }
    // What threw is the host's, not the model's: it is not repeated.
    return { ok: false, problem: 'they cannot be read (a getter or a Proxy threw)' }
  }
}
