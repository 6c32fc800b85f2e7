import { hashOf } from '@shallot/core/kit'
import { flat } from './flat-string.js'

const KEY = /^[\x20-\x7e]{1,255}$/

/**
 * Why `key` cannot be an idempotency key, or `undefined` when it can: 1 to 255 printable ASCII
 * characters, the limit of Stripe's and the IETF draft's `Idempotency-Key`.
 *
 * @example
 * keyProblem('order-2026-00042') // undefined
 * keyProblem('')                 // 'is empty'
 */
export function keyProblem(key: unknown): string | undefined {
  if (typeof key !== 'string') return `must be a string, got ${key === null ? 'null' : typeof key}`
  if (KEY.test(key)) return undefined
  if (key.length === 0) return 'is empty'
  if (key.length > 255) return `is ${key.length} characters long; the limit is 255`
  return 'contains characters other than printable ASCII (letters, digits, punctuation, space)'
}

/**
 * The default key of a call: a hash of scope, run id, tool name and the hash of the canonical
 * arguments, so key order and whitespace do not matter and a resumed run (same run id) derives
 * the same key.
 *
 * @example
 * derivedKey('default', 'run-1', 'charge_card', hashOf({ amount: 5, card: 'c1' })) // '9b1f…' (32 hex)
 */
export function derivedKey(scope: string, runId: string, toolName: string, argsHash: string): string {
  return hashOf([scope, runId, toolName, argsHash])
}

/**
 * The fingerprint of a call's arguments kept beside its record, to tell an explicit key reused
 * with different arguments. Includes the tool name: one key, two tools is a mismatch too.
 *
 * @example
 * argsHashOf('charge_card', { b: 1, a: 2 }) === argsHashOf('charge_card', { a: 2, b: 1 }) // true
 */
export function argsHashOf(toolName: string, args: unknown): string {
  return hashOf([toolName, args])
}

/**
 * The key a store sees: scope, one space, key. Scopes hold no spaces, so the pair is recoverable
 * and one scope can never address another's records.
 *
 * @example
 * storeKeyOf('tenant-a', 'order-42') // 'tenant-a order-42'
 */
export function storeKeyOf(scope: string, key: string): string {
  // Flat, since every store hashes or encodes it at least once, and the memory store keeps it.
  return flat(`${scope} ${key}`)
}
