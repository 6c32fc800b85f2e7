/**
 * `text`, made one flat string in place. A string built by concatenation is a tree of its pieces
 * (a sliced hash holding its whole digest, say) until something reads its characters: then V8
 * copies it flat once, and the garbage collector drops the pieces. A key that is hashed and
 * compared on every call, or a record kept for hours, is cheaper as one flat string.
 *
 * @example
 * const storeKey = flat(`${scope} ${key}`)
 */
export function flat(text: string): string {
  if (typeof text === 'string') text.charCodeAt(0)
  return text
}
