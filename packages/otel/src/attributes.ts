import type { Attributes, AttributeValue, HrTime } from '@opentelemetry/api'
import { createSanitizer, type Sanitizer } from '@shallot/core/kit'

/** Longest string shallot puts in an attribute: enough for a message, never a whole payload. */
export const MAX_ATTRIBUTE_CHARS = 1024

/** The sanitizer of one instrumentation: core's, with the secrets it was given. */
export function sanitizerOf(secrets: readonly (string | RegExp)[] | undefined): Sanitizer {
  return createSanitizer({ secrets: secrets ?? [] })
}

function attributeOf(value: unknown, text: Sanitizer): AttributeValue | undefined {
  if (typeof value === 'string') return text.text(value, MAX_ATTRIBUTE_CHARS)
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value)
  if (typeof value === 'boolean') return value
  if (typeof value === 'bigint') return value.toString()
  if (value === null || value === undefined || typeof value === 'function' || typeof value === 'symbol') return undefined
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.map((v: string) => text.text(v, MAX_ATTRIBUTE_CHARS))
  try {
    // Objects (a breaker's counts, a fallback's sources) become sanitized JSON: attributes hold primitives only.
    return text.text(JSON.stringify(value) ?? '', MAX_ATTRIBUTE_CHARS)
  } catch {
    return '[unserializable]'
  }
}

/**
 * A layer event's fields as span-event attributes: primitives kept, strings sanitized and capped,
 * objects as sanitized JSON, the reserved `type` and `at` dropped. A throwing getter loses only its field.
 */
export function eventAttributes(fields: Readonly<Record<string, unknown>>, text: Sanitizer): Attributes {
  const out: Attributes = Object.create(null)
  let keys: string[]
  try {
    keys = Object.keys(fields)
  } catch {
    return out
  }
  for (const key of keys) {
    if (key === 'type' || key === 'at' || key === 'runId' || key === 'callId' || key === 'tool') continue
    try {
      const value = attributeOf(fields[key], text)
      if (value !== undefined) out[key] = value
    } catch {
      // A field that cannot be read is left out; the event itself still counts.
    }
  }
  return out
}

/**
 * Maps an injected clock's monotonic milliseconds onto epoch time, anchored once per clock, so span
 * and event times follow the stack's clock (virtual time in tests and demos) and stay in order.
 */
export class ClockTime {
  readonly #anchors = new WeakMap<object, { epoch: number; clock: number }>()

  at(clock: { now(): number }, ms: number = clock.now()): HrTime {
    let anchor = this.#anchors.get(clock)
    if (anchor === undefined) {
      anchor = { epoch: Date.now(), clock: clock.now() }
      this.#anchors.set(clock, anchor)
    }
    const epochMs = anchor.epoch + (ms - anchor.clock)
    const seconds = Math.floor(epochMs / 1000)
    return [seconds, Math.round((epochMs - seconds * 1000) * 1e6)]
  }
}
