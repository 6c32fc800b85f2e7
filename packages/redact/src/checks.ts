import { isIPv6 } from 'node:net'

/**
 * The card number in a run of digits and single separators, from its start: the longest prefix of
 * 13 to 19 digits, ending on a digit, that starts with 2 to 6 (the card networks' ranges) and passes
 * Luhn. Returns its length in characters, or 0. One pass: Luhn's sum of every prefix comes from two
 * running sums (every even, or every odd, position doubled).
 */
export function cardLength(text: string): number {
  const first = text.charCodeAt(0)
  if (first < 50 || first > 54) return 0
  let count = 0
  let evenDoubled = 0
  let oddDoubled = 0
  let best = 0
  for (let i = 0; i < text.length && count < 19; i++) {
    const d = text.charCodeAt(i) - 48
    if (d < 0 || d > 9) continue
    const doubled = d * 2 > 9 ? d * 2 - 9 : d * 2
    if (count % 2 === 0) {
      evenDoubled += doubled
      oddDoubled += d
    } else {
      evenDoubled += d
      oddDoubled += doubled
    }
    count++
    // In a prefix of n digits positions n-2, n-4, ... are doubled: the even ones when n is even.
    if (count >= 13 && (count % 2 === 0 ? evenDoubled : oddDoubled) % 10 === 0) best = i + 1
  }
  return best
}

/** IBAN lengths by country (SWIFT's registry); two letters that name no country here are no IBAN. */
const IBAN_LENGTHS: Readonly<Record<string, number>> = {
  AD: 24,
  AE: 23,
  AL: 28,
  AT: 20,
  AZ: 28,
  BA: 20,
  BE: 16,
  BG: 22,
  BH: 22,
  BR: 29,
  BY: 28,
  CH: 21,
  CR: 22,
  CY: 28,
  CZ: 24,
  DE: 22,
  DK: 18,
  DO: 28,
  EE: 20,
  EG: 29,
  ES: 24,
  FI: 18,
  FO: 18,
  FR: 27,
  GB: 22,
  GE: 22,
  GI: 23,
  GL: 18,
  GR: 27,
  GT: 28,
  HR: 21,
  HU: 28,
  IE: 22,
  IL: 23,
  IQ: 23,
  IS: 26,
  IT: 27,
  JO: 30,
  KW: 30,
  KZ: 20,
  LB: 28,
  LC: 32,
  LI: 21,
  LT: 20,
  LU: 20,
  LV: 21,
  MC: 27,
  MD: 24,
  ME: 22,
  MK: 19,
  MR: 27,
  MT: 31,
  MU: 30,
  NL: 18,
  NO: 15,
  PK: 24,
  PL: 28,
  PS: 29,
  PT: 25,
  QA: 29,
  RO: 24,
  RS: 22,
  SA: 24,
  SC: 31,
  SE: 24,
  SI: 19,
  SK: 24,
  SM: 27,
  ST: 25,
  SV: 28,
  TL: 23,
  TN: 24,
  TR: 26,
  UA: 29,
  VA: 22,
  VG: 24,
  XK: 20,
}

/** A letter or digit's value in the mod-97 check: digits 0–9, letters 10–35 in either case. */
function ibanValue(c: number): number {
  if (c >= 97) return c - 87
  if (c >= 65) return c - 55
  return c - 48
}

/**
 * The IBAN at the start of `text` (letters in either case, groups split by single spaces or dashes)
 * for a country of the IBAN registry: its country's length of characters, if they pass ISO 13616's
 * mod-97 check (the first four moved to the end). Returns its length in characters of `text`, or 0.
 */
export function ibanLength(text: string): number {
  const known = IBAN_LENGTHS[text.slice(0, 2).toUpperCase()]
  if (known === undefined) return 0
  const at: number[] = []
  for (let i = 0; i < text.length && at.length < known; i++) {
    const c = text.charCodeAt(i)
    if (c !== 32 && c !== 45) at.push(i)
  }
  if (at.length < known) return 0
  let rest = 0
  for (let k = 4; k < known + 4; k++) {
    const value = ibanValue(text.charCodeAt(at[k % known] as number))
    rest = value > 9 ? (rest * 100 + value) % 97 : (rest * 10 + value) % 97
  }
  return rest === 1 ? (at[known - 1] as number) + 1 : 0
}

/** The IPv6 address a candidate holds, trailing colons of the sentence around it dropped; '' when it is none. */
export function ipv6Of(candidate: string): string {
  let text = candidate
  while (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1)
  const zone = text.indexOf('%')
  const address = zone < 0 ? text : text.slice(0, zone)
  return address !== '::' && isIPv6(address) ? text : ''
}
