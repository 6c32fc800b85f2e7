const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype'])
const MAX_DEPTH = 32
const MAX_NODES = 10_000

/**
 * Why edited arguments cannot go to a tool, or `undefined` when they are plain JSON within bounds.
 * Answers from a human arrive from a snapshot or a UI callback, not through the stack's own guard.
 *
 * @example
 * plainArgsProblem({ amountCents: Number.NaN }) // 'amountCents is not a finite number'
 */
export function plainArgsProblem(value: unknown): string | undefined {
  let nodes = 0
  const walk = (node: unknown, path: string, depth: number): string | undefined => {
    if (++nodes > MAX_NODES) return `more than ${MAX_NODES} values`
    if (depth > MAX_DEPTH) return `${path || 'the arguments'} nest deeper than ${MAX_DEPTH} levels`
    if (node === null || typeof node === 'string' || typeof node === 'boolean') return undefined
    if (typeof node === 'number') return Number.isFinite(node) ? undefined : `${path || 'the value'} is not a finite number`
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const problem = walk(node[i], `${path}[${i}]`, depth + 1)
        if (problem !== undefined) return problem
      }
      return undefined
    }
    if (
      (typeof node === 'object' && Object.getPrototypeOf(node) === Object.prototype) ||
      (typeof node === 'object' && Object.getPrototypeOf(node) === null)
    ) {
      for (const key of Object.keys(node as object)) {
        if (FORBIDDEN.has(key)) return `${path ? `${path}.` : ''}${key} is not an allowed argument name`
        const problem = walk((node as Record<string, unknown>)[key], path ? `${path}.${key}` : key, depth + 1)
        if (problem !== undefined) return problem
      }
      return undefined
    }
    return `${path || 'the arguments'} is not plain JSON (${typeof node})`
  }
  return walk(value, '', 0)
}
