/**
 * Formats a duration in milliseconds as seconds the way a person writes them: at most three
 * decimals, no trailing zeros, no exponent.
 *
 * @example
 * formatSeconds(50) // '0.05s'
 * formatSeconds(2000) // '2s'
 * formatSeconds(20_000) // '20s'
 */
export function formatSeconds(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`formatSeconds(): ms must be a finite number >= 0, got ${ms}`)
  const fixed = (ms / 1000).toFixed(3)
  return `${fixed.replace(/\.?0+$/, '') || '0'}s`
}
