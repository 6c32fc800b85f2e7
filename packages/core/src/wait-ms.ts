/**
 * A wait someone else proposed (a store's answer, a server's pushback) as a layer may act on it: a
 * finite number of milliseconds, 0 or more (`-0` reads as 0). Anything else (`NaN`, `±Infinity`, a
 * negative, `'5'`, `null`) answers `undefined`: garbage, never a wait to sleep on, because a timer
 * given `Infinity` fires at once on Node and never on a manual clock. Comparing the wait with the
 * layer's own bound (`maxWaitMs`, `maxCooldownMs`) stays the layer's job: only the layer knows
 * whether a wait past it is a refusal or a clamp.
 *
 * @example
 * waitMsOf(250) // 250
 * waitMsOf(Number.POSITIVE_INFINITY) // undefined
 * waitMsOf('5') // undefined
 */
export function waitMsOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value + 0 : undefined
}
