import { ToolError } from './errors.js'

export interface ArgsLimits {
  /** Largest serialized size of a call's arguments, in bytes (approximate: UTF-16 units plus syntax). */
  maxBytes: number
  /** Deepest nesting of objects and arrays. */
  maxDepth: number
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype'])

/** Refused before any layer or tool saw the call, so nothing reached the world: safe to repeat, like a schema refusal. */
function refuse(message: string, hint: string): ToolError {
  return new ToolError('invalid_arguments', message, { category: 'recoverable', retryable: false, safeToRepeat: true, hint })
}

function tooLarge(maxBytes: number): ToolError {
  return refuse(
    `arguments are too large: over ${maxBytes} bytes`,
    'send smaller arguments, or pass a reference (an id or a path) instead of the content',
  )
}

const notPlain = () => refuse('arguments must be plain JSON values', 'send objects, arrays, strings, numbers, booleans and null only')

/** The walk's running total and its bound, reset at every guardArgs call (the walk is synchronous). */
let bytes = 0
let maxBytes = 0
let maxDepth = 0

function grow(by: number): void {
  bytes += by
  if (bytes > maxBytes) throw tooLarge(maxBytes)
}

/** Recursion, bounded by `maxDepth` (at most 1000 by the stack's schema), so it cannot exhaust the stack. */
function walk(value: unknown, depth: number): void {
  if (typeof value === 'string') {
    grow(value.length + 2)
    return
  }
  if (typeof value !== 'object' || value === null) {
    if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') {
      throw refuse(
        `arguments must be plain JSON values, got a ${typeof value}`,
        'send objects, arrays, strings, numbers, booleans and null only',
      )
    }
    grow(8)
    return
  }
  if (depth > maxDepth) throw refuse(`arguments are nested too deeply: over ${maxDepth} levels`, 'flatten the arguments')
  grow(2)
  if (Array.isArray(value)) {
    // By index, counting holes as null: a sparse array of huge length must not pass as empty,
    // and a wide one must be refused after reading about as much as the cap, not all of it.
    const length = value.length
    for (let i = 0; i < length; i++) {
      grow(1)
      walk(value[i], depth + 1)
    }
    return
  }
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) throw notPlain()
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue
    if (FORBIDDEN_KEYS.has(key)) {
      throw refuse(`arguments contain the forbidden key "${key}"`, 'remove the __proto__, constructor and prototype keys')
    }
    grow(key.length + 4)
    walk((value as Record<string, unknown>)[key], depth + 1)
  }
}

/**
 * Parses and checks untrusted arguments before any layer hashes, stores or logs them:
 * JSON text is parsed, oversized or over-deep values and prototype-polluting keys are refused.
 * Stops at the first violation, so 10 MB costs no more than the limit.
 */
export function guardArgs(raw: unknown, limits: ArgsLimits): unknown {
  let args = raw
  if (typeof raw === 'string') {
    if (raw.length > limits.maxBytes) throw tooLarge(limits.maxBytes)
    const text = raw.trim()
    if (text === '') {
      args = {}
    } else {
      try {
        args = JSON.parse(text)
      } catch (err) {
        throw refuse(`arguments are not valid JSON: ${(err as Error).message}`, 'send the arguments as one JSON object')
      }
    }
  }
  if (args === undefined || args === null) return {}
  bytes = 0
  maxBytes = limits.maxBytes
  maxDepth = limits.maxDepth
  walk(args, 1)
  return args
}
