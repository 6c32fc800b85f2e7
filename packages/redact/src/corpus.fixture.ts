import { seededRandom } from '@shallot/testing'

/** One planted value: what it is, and the text that must never reach the model. */
export interface Planted {
  readonly detector: string
  readonly value: string
}

/** Values a corpus plants, in varied formats, from a seeded random: the same corpus on every run. */
export function plantedValues(seed = 38): Planted[] {
  const random = seededRandom(seed)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T
  const digits = (n: number) => Array.from({ length: n }, () => Math.floor(random() * 10)).join('')
  const alnum = (n: number, set = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789') =>
    Array.from({ length: n }, () => pick([...set])).join('')
  const out: Planted[] = []

  const locals = ['alice', 'Bob.Smith', 'j.doe+billing', 'ops_team', 'x9', 'first.last-name', 'UPPER']
  const domains = ['example.com', 'mail.example.co.uk', 'corp-mail.io', 'EXAMPLE.ORG', 'sub.domain.example.museum']
  for (let i = 0; i < 40; i++) out.push({ detector: 'email', value: `${pick(locals)}${i}@${pick(domains)}` })

  const cardPrefixes = ['4', '51', '55', '2221', '34', '37', '6011', '65', '35', '36', '62']
  for (let i = 0; i < 40; i++) {
    const prefix = pick(cardPrefixes)
    const length = prefix === '34' || prefix === '37' ? 15 : pick([16, 16, 16, 19])
    const body = prefix + digits(length - prefix.length - 1)
    const number = body + luhnDigit(body)
    const separator = pick(['', ' ', '-'])
    const grouped = separator === '' ? number : (number.match(/.{1,4}/g) as string[]).join(separator)
    out.push({ detector: 'card', value: grouped })
  }

  const ibanCountries: Array<[string, number]> = [
    ['DE', 22],
    ['GB', 22],
    ['FR', 27],
    ['NL', 18],
    ['ES', 24],
    ['IT', 27],
    ['CH', 21],
    ['BE', 16],
    ['NO', 15],
    ['PL', 28],
  ]
  for (let i = 0; i < 30; i++) {
    const [country, length] = pick(ibanCountries)
    const bban = country === 'GB' || country === 'NL' ? alnum(4, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ') + digits(length - 8) : digits(length - 4)
    const iban = country + ibanCheck(country, bban) + bban
    const spaced = pick([true, false])
    out.push({ detector: 'iban', value: spaced ? (iban.match(/.{1,4}/g) as string[]).join(' ') : iban })
  }

  for (let i = 0; i < 20; i++) {
    const octet = () => String(Math.floor(random() * 256))
    out.push({ detector: 'ip', value: `${pick(['10', '172', '192', '8', '203', '100'])}.${octet()}.${octet()}.${octet()}` })
  }
  const hex = () => Math.floor(random() * 0x10000).toString(16)
  for (let i = 0; i < 15; i++) {
    const full = Array.from({ length: 8 }, hex).join(':')
    out.push({
      detector: 'ip',
      value: pick([full, `2001:db8::${hex()}:${hex()}`, `fe80::${hex()}%eth0`, `::ffff:192.0.2.${i + 1}`, full.toUpperCase()]),
    })
  }

  const keys = [
    () => `sk-${alnum(48)}`,
    () => `sk-ant-api03-${alnum(40)}`,
    () => `sk-proj-${alnum(40)}`,
    () => `sk_live_${alnum(24)}`,
    () => `rk_test_${alnum(24)}`,
    () => `ghp_${alnum(36)}`,
    () => `github_pat_${alnum(22)}_${alnum(40)}`,
    () => `xoxb-${digits(12)}-${digits(12)}-${alnum(24)}`,
    () => `xapp-1-${alnum(11)}-${digits(13)}-${alnum(32)}`,
    () => `AKIA${alnum(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}`,
    () => `AIza${alnum(35)}`,
    () => `glpat-${alnum(20)}`,
    () => `npm_${alnum(36)}`,
    () => `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0${alnum(10)}.${alnum(43)}`,
  ]
  for (let i = 0; i < 40; i++)
    out.push({ detector: i % keys.length === 13 ? 'secret' : 'api_key', value: (keys[i % keys.length] as () => string)() })

  for (let i = 0; i < 15; i++) out.push({ detector: 'employee_id', value: `EMP-${digits(6)}` })
  return out
}

function luhnDigit(body: string): string {
  let sum = 0
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i])
    if (i % 2 === 0) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return String((10 - (sum % 10)) % 10)
}

function ibanCheck(country: string, bban: string): string {
  const moved = `${bban}${country}00`
  let rest = 0
  for (const c of moved) {
    const v = /[A-Z]/.test(c) ? c.charCodeAt(0) - 55 : Number(c)
    rest = v > 9 ? (rest * 100 + v) % 97 : (rest * 10 + v) % 97
  }
  return String(98 - rest).padStart(2, '0')
}

/** Plants each value in one of many settings: a sentence, JSON text, a nested object, a key, a list, a URL. */
export function plantedResult(values: readonly Planted[], seed = 2026): unknown {
  const random = seededRandom(seed)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T
  const records: unknown[] = []
  const byKey: Record<string, unknown> = {}
  for (const [i, { value }] of values.entries()) {
    const setting = pick([
      () => records.push(`Contact: ${value}.`),
      () => records.push(`(${value})`),
      () => records.push(JSON.stringify({ note: `see ${value}`, n: i })),
      () => records.push({ customer: { profile: { details: [`${value}`] } } }),
      () => {
        byKey[value] = { seen: i }
      },
      () => records.push(`"${value}",`),
      () => records.push(`https://portal.example.com/lookup?q=${encodeURIComponent('x')}&v=${value}&next=1`),
      () => records.push(`line one\n${value}\tline two`),
      () => records.push([[[{ deep: { deeper: value } }]]]),
      () => records.push(`<${value}>`),
    ])
    setting()
  }
  const result = JSON.parse(`{"__proto__": {"planted": true}}`) as Record<string, unknown>
  Object.defineProperty(result, 'records', { value: records, enumerable: true })
  Object.defineProperty(result, 'byKey', { value: byKey, enumerable: true })
  return result
}
