/** Only the head of a message decides its outcome; it also bounds the regex work. */
const MAX_INPUT = 500

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g
const TIMESTAMP =
  /\d{4}-\d{2}-\d{2}(?:[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?|\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b/g
// A hex id must hold a digit and a letter, so plain words ("deadline", "facade") survive.
const HEX = /(?<![0-9a-z])(?:0x[0-9a-f]+|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,})(?![0-9a-z])/g
const NUMBER = /\d+(?:[.,]\d+)*/g
const SPACE = /\s+/g

/**
 * Reduces an error message to what stays the same when the same failure happens again:
 * lowercase, whitespace collapsed, and the parts that vary between identical failures replaced
 * by placeholders: UUIDs (`<uuid>`), dates and times (`<time>`), hex ids of 6+ characters
 * (`<hex>`), and digit runs (`<n>`). Only the first 500 characters count.
 *
 * @example
 * normalizeMessage('Took 1203ms (request 9f2c4e1a)') // 'took <n>ms (request <hex>)'
 * normalizeMessage('took  998ms (request 0b7d33aa)') // the same
 */
export function normalizeMessage(message: string): string {
  return maskVarying(message.slice(0, MAX_INPUT).toLowerCase())
}

/**
 * The placeholder step of {@link normalizeMessage}, for text already lowercased and cut: UUIDs,
 * dates and times, hex ids and digit runs become `<uuid>`, `<time>`, `<hex>`, `<n>`; whitespace collapses.
 *
 * @example
 * maskVarying('retry at 10:42, job 7') // 'retry at <time>, job <n>'
 */
export function maskVarying(lowercased: string): string {
  return lowercased
    .replace(UUID, '<uuid>')
    .replace(TIMESTAMP, '<time>')
    .replace(HEX, '<hex>')
    .replace(NUMBER, '<n>')
    .replace(SPACE, ' ')
    .trim()
}
