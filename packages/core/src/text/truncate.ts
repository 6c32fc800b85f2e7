import { REDACTED } from './redacted.js'

/** How far back a cut looks for whitespace, so a token (a secret, say) is dropped whole rather than halved. */
const WORD_BACKOFF = 256

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff
}

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x09
}

/**
 * Where to cut `text` so at most `room` characters stay: at the last whitespace in the final 256
 * characters when there is one (never below half the room), and never between a surrogate pair.
 */
export function cutPoint(text: string, room: number): number {
  if (room >= text.length) return text.length
  let end = room
  const floor = Math.max(room - WORD_BACKOFF, Math.floor(room / 2))
  for (let i = room; i > floor; i--) {
    if (isSpace(text.charCodeAt(i))) {
      end = i
      break
    }
  }
  if (end > 0 && isHighSurrogate(text.charCodeAt(end - 1))) end--
  return end
}

/**
 * The one truncation behind every text shallot shows a model: `text` cut to at most `max`
 * characters, marker included, when it is longer (or when `force` says an earlier step already cut
 * it). `originalLength` is what the marker reports. Below the marker's own length the text is cut
 * without one.
 */
export function truncateFrom(text: string, max: number, originalLength: number, force = false): string {
  if (!force && text.length <= max) return text
  const marker = `… [truncated from ${originalLength} chars]`
  if (max < marker.length) return text.slice(0, cutPoint(text, max))
  let kept = text.slice(0, cutPoint(text, max - marker.length)).trimEnd()
  // Never end on half a "[redacted]": it reads like a leak even though it is not one.
  const open = kept.lastIndexOf('[')
  if (open >= 0 && kept.length - open < REDACTED.length && REDACTED.startsWith(kept.slice(open))) kept = kept.slice(0, open)
  return kept + marker
}

/**
 * Cuts text longer than `max` characters to at most `max`, ending with `… [truncated from N chars]`.
 * The cut falls on whitespace when some is near (so a token is dropped whole, not halved), never
 * between the halves of a surrogate pair, and never inside a `[redacted]`. Every cap in shallot
 * (tool output, error messages and hints, panic text) is this one.
 *
 * @example
 * truncate('word '.repeat(100), 60) // 'word word word word word word… [truncated from 500 chars]'
 */
export function truncate(text: string, max: number): string {
  return truncateFrom(text, max, text.length)
}
