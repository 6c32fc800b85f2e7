import { cardLength, ibanLength, ipv6Of } from './checks.js'

/**
 * One detector: a candidate pattern (global, linear on any input: every pattern starts at a literal
 * or at the start of a run its lookbehind cannot re-enter, and no quantified group holds another
 * quantifier over the same characters), and `accept`, which checks a candidate and answers the
 * length of the value it holds from the candidate's start, or 0 to reject it.
 */
export interface Detector {
  readonly name: string
  readonly pattern: RegExp
  readonly accept: (candidate: string) => number
  /** The value with all but what identifies its kind hidden. */
  readonly mask: (value: string) => string
}

/** The detectors shipped with the layer, in the order they are tried. */
export const BUILTIN_DETECTORS = ['email', 'card', 'iban', 'ip', 'api_key', 'secret'] as const
export type BuiltinDetector = (typeof BUILTIN_DETECTORS)[number]

const whole = (candidate: string) => candidate.length
const stars = (text: string) => text.replace(/[A-Za-z0-9]/g, '*')

/** Keeps the separators and the last four characters: `****-****-****-1111`. */
function keepLastFour(value: string, keepFirst = 0): string {
  let seen = 0
  const total = value.replace(/[^A-Za-z0-9]/g, '').length
  let out = ''
  for (const c of value) {
    if (!/[A-Za-z0-9]/.test(c)) {
      out += c
      continue
    }
    seen++
    out += seen <= keepFirst || seen > total - 4 ? c : '*'
  }
  return out
}

const AWS_PREFIXES = 'AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|APKA|ABIA|ACCA'

const KEY_PATTERN = new RegExp(
  '(?<![A-Za-z0-9_-])(?:' +
    [
      // OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-) keys.
      'sk-[A-Za-z0-9_-]{16,}',
      // Stripe secret and restricted keys.
      '(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}',
      // GitHub tokens.
      'gh[pousr]_[A-Za-z0-9]{20,}',
      'github_pat_[A-Za-z0-9_]{20,}',
      // Slack bot, user, app-level and config tokens.
      'xox[abposre]-[A-Za-z0-9-]{10,}',
      'xapp-[A-Za-z0-9-]{10,}',
      // AWS access key ids.
      `(?:${AWS_PREFIXES})[A-Z0-9]{16}(?![A-Za-z0-9])`,
      // Google API keys, GitLab, npm and Hugging Face tokens, Stripe webhook secrets.
      'AIza[A-Za-z0-9_-]{30,}',
      'glpat-[A-Za-z0-9_-]{20,}',
      'npm_[A-Za-z0-9]{36}',
      'hf_[A-Za-z0-9]{30,}',
      'whsec_[A-Za-z0-9]{16,}',
    ].join('|') +
    ')',
  'g',
)

/** The key's kind stays readable (`sk-ant-`, `ghp_`, `AKIA`), then its last four: `sk-ant-****wxyz`. */
function maskKey(value: string): string {
  const prefix =
    /^(?:sk-(?:ant-|proj-|svcacct-)?|(?:sk|rk)_(?:live|test)_|[a-z]+_(?:pat_)?|xox[a-z]-|[a-z]+-|[A-Z]{4})/.exec(value)?.[0] ?? ''
  return `${prefix}****${value.length - prefix.length >= 12 ? value.slice(-4) : ''}`
}

function maskEmail(value: string): string {
  const at = value.lastIndexOf('@')
  return `${value.slice(0, 1)}***${value.slice(at)}`
}

function maskIp(value: string): string {
  if (value.includes(':')) return `${value.split(':')[0]}:****`
  return `${value.split('.')[0]}.*.*.*`
}

/** The built-in detectors but `secret` (core's sanitizer, which reports no spans), by name. */
export const DETECTORS: Readonly<Record<Exclude<BuiltinDetector, 'secret'>, readonly Detector[]>> = {
  email: [
    {
      name: 'email',
      // A local part starting where its class starts, an @, dotted labels, a top-level domain of letters.
      pattern: /(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])/g,
      accept: whole,
      mask: maskEmail,
    },
  ],
  card: [
    {
      name: 'card',
      // 13 to 19 digits, single spaces or dashes between them; `accept` finds the longest Luhn-valid prefix.
      pattern: /(?<![\d.,-])[2-6](?:[ -]?\d){12,22}(?!\d)/g,
      accept: cardLength,
      mask: (value) => keepLastFour(value),
    },
  ],
  iban: [
    {
      name: 'iban',
      // Two letters, two check digits, then up to 30 letters or digits in groups; `accept` checks length and mod-97.
      pattern: /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]){11,34}/g,
      accept: ibanLength,
      mask: (value) => keepLastFour(value, 2),
    },
  ],
  ip: [
    {
      name: 'ip',
      // IPv6 first, so an IPv4-mapped address is one value: hex groups and colons, an optional dotted tail and zone.
      pattern: /(?<![\w:.%])(?:[0-9A-Fa-f]{1,4}|:)(?::[0-9A-Fa-f]{0,4}){2,7}(?:\.\d{1,3}){0,3}(?:%[\w.]{1,15})?(?!\w|\.\d|:[0-9A-Fa-f])/g,
      accept: (candidate) => ipv6Of(candidate).length,
      mask: maskIp,
    },
    {
      name: 'ip',
      pattern: /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!\.?\d)/g,
      accept: whole,
      mask: maskIp,
    },
  ],
  api_key: [{ name: 'api_key', pattern: KEY_PATTERN, accept: whole, mask: maskKey }],
}

export { stars }
