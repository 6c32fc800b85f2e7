/** What a cut text ends with, so the reader knows it was cut. */
export const TRUNCATION_MARKER = '… [truncated]'

/**
 * Cuts `text` to at most `max` characters, marker included, never splitting a surrogate pair.
 *
 * @example
 * capText('x'.repeat(1000), 100) // 87 × 'x' + '… [truncated]'
 */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text
  let end = Math.max(0, max - TRUNCATION_MARKER.length)
  if (isHighSurrogate(text.charCodeAt(end - 1))) end--
  return `${text.slice(0, end)}${TRUNCATION_MARKER}`.slice(0, max)
}

/** True for the first half of a surrogate pair; cutting after it would leave half a character. */
export function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff
}
