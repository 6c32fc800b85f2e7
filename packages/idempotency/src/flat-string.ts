/**
 * `text`, made one flat string in place. A string built by concatenation keeps every piece it was
 * built from (a sliced hash keeps its whole digest) until its characters are read once: a store
 * that holds records for hours would hold those pieces too.
 *
 * @example
 * const storeKey = flat(`${scope} ${key}`)
 */
export function flat(text: string): string {
  if (typeof text === 'string') text.charCodeAt(0)
  return text
}

/**
 * A flat copy of `text` that shares nothing with it. A slice of a longer string keeps the whole of
 * it alive (a 32-character hash, its 64-character digest); a record kept for hours should keep only
 * its own characters.
 *
 * @example
 * const argsHash = ownCopy(ctx.fingerprint)
 */
export function ownCopy(text: string): string {
  if (typeof text !== 'string' || text.length < 2) return text
  return flat(text.slice(0, 1) + text.slice(1))
}
