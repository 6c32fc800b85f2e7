import { REDACTED } from './redacted.js'

// Every pattern below is linear on any input: each starts at a literal or at the start of a run that
// its own character class cannot re-enter (a lookbehind on the same class), and no quantified group
// contains another quantifier that can match the same characters. See docs/decisions/121 and 210.
const TOKEN = '(?<![A-Za-z0-9_-])'
const SECRET_KEYS =
  'password|passwd|pwd|secret|client_secret|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|access_token|refresh_token|auth_token|session_token|token'

/**
 * One redaction: the pattern, its replacement, and the literals one of which any match must contain
 * (`lower`: matched case-insensitively). A pattern whose literals are absent is skipped, so text with
 * no secrets costs one quick test per shape instead of a full pattern.
 */
interface RedactionSpec {
  readonly pattern: RegExp
  readonly replacement: string
  readonly needles: readonly string[]
  readonly lower?: boolean
}

interface Redaction {
  readonly pattern: RegExp
  readonly replacement: string
  /** The needles as one alternation: a regex test stays fast where `includes` slows down on repetitive text. */
  readonly gate: RegExp
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

const AWS_PREFIXES = ['AKIA', 'ASIA', 'AGPA', 'AIDA', 'AROA', 'ANPA', 'ANVA', 'APKA', 'ABIA', 'ACCA']
const INTERNAL_TLDS = ['internal', 'local', 'localdomain', 'lan', 'corp', 'intranet', 'home.arpa']

const SPECS: readonly RedactionSpec[] = [
  // Userinfo in any URL: postgres://u:p@host, https://ghp_x@github.com.
  { pattern: /:\/\/[^\s/?#@]+@/g, replacement: `://${REDACTED}@`, needles: ['://'] },
  { pattern: /\b(bearer[ \t]+)[A-Za-z0-9._~+/=-]{16,}/gi, replacement: `$1${REDACTED}`, needles: ['bearer'], lower: true },
  {
    pattern: /(authorization["']?[ \t]*[:=][ \t]*["']?)(?:(?:bearer|basic|token|digest)[ \t]+)?[^\s"',;]+/gi,
    replacement: `$1${REDACTED}`,
    needles: ['authorization'],
    lower: true,
  },
  { pattern: new RegExp(`((?:${SECRET_KEYS})=)[^\\s&"',;]+`, 'gi'), replacement: `$1${REDACTED}`, needles: ['='] },
  { pattern: new RegExp(`("(?:${SECRET_KEYS})"[ \\t]*:[ \\t]*")[^"\\\\\\n]+`, 'gi'), replacement: `$1${REDACTED}`, needles: ['"'] },
  { pattern: /-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[A-Za-z0-9+/=\s]*/g, replacement: REDACTED, needles: ['-----BEGIN'] },
  // OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-) keys.
  { pattern: new RegExp(`${TOKEN}sk-[A-Za-z0-9_-]{16,}`, 'g'), replacement: REDACTED, needles: ['sk-'] },
  { pattern: new RegExp(`${TOKEN}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{8,}`, 'g'), replacement: REDACTED, needles: ['_live_', '_test_'] },
  { pattern: new RegExp(`${TOKEN}whsec_[A-Za-z0-9]{16,}`, 'g'), replacement: REDACTED, needles: ['whsec_'] },
  {
    pattern: new RegExp(`${TOKEN}(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`, 'g'),
    replacement: REDACTED,
    needles: ['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'github_pat_'],
  },
  // AWS access key ids (user, temporary, role, group and other principal prefixes).
  {
    pattern: new RegExp(`${TOKEN}(?:${AWS_PREFIXES.join('|')})[A-Z0-9]{16}(?![A-Za-z0-9])`, 'g'),
    replacement: REDACTED,
    needles: AWS_PREFIXES,
  },
  // Slack bot, user, app-level and config tokens, and incoming-webhook URLs.
  {
    pattern: new RegExp(`${TOKEN}(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,})`, 'g'),
    replacement: REDACTED,
    needles: ['xox', 'xapp-'],
  },
  {
    pattern: /hooks\.slack\.com\/services\/[A-Za-z0-9/_-]+/g,
    replacement: `hooks.slack.com/services/${REDACTED}`,
    needles: ['hooks.slack.com/'],
  },
  { pattern: new RegExp(`${TOKEN}AIza[A-Za-z0-9_-]{30,}`, 'g'), replacement: REDACTED, needles: ['AIza'] },
  // A JWT, or its first two parts when a cut took the signature.
  {
    pattern: new RegExp(`${TOKEN}eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}(?:\\.[A-Za-z0-9_-]*)?`, 'g'),
    replacement: REDACTED,
    needles: ['eyJ'],
  },
  // E-mail addresses: a local part starting where its class starts, an @, dotted labels.
  { pattern: /(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])/g, replacement: REDACTED, needles: ['@'] },
  // Private, loopback and link-local IPv4: 10/8, 127/8, 172.16/12, 192.168/16, 169.254/16.
  {
    pattern: /(?<![\d.])(?:(?:10|127)\.\d{1,3}|172\.(?:1[6-9]|2\d|3[01])|192\.168|169\.254)\.\d{1,3}\.\d{1,3}(?!\.?\d)/g,
    replacement: REDACTED,
    needles: ['10.', '127.', '172.', '192.168.', '169.254.'],
  },
  // IPv6 loopback, unique local (fc00::/7) and link-local (fe80::/10).
  { pattern: /(?<![\w:])(?:::1(?![\w:])|(?:f[cd][0-9a-f]{2}|fe[89ab][0-9a-f]):[0-9a-f:]*)/gi, replacement: REDACTED, needles: [':'] },
  // Internal host names: *.internal, *.local, *.lan, *.corp, *.intranet, *.localdomain, *.home.arpa.
  {
    pattern: new RegExp(`(?<![\\w.-])[a-z0-9][a-z0-9.-]*\\.(?:${INTERNAL_TLDS.join('|').replace('.', '\\.')})(?![\\w-]|\\.[\\w-])`, 'gi'),
    replacement: REDACTED,
    needles: INTERNAL_TLDS.map((tld) => `.${tld}`),
    lower: true,
  },
  // Home directories: the user's name goes, the path the model asked about stays. No lookbehind, so a
  // web path like /home/feed is redacted too: better a lost word than a name that survives.
  { pattern: /\/(?:home|Users)\/[\w.$-]+/g, replacement: REDACTED, needles: ['/home/', '/Users/'] },
  { pattern: /\b[A-Za-z]:[\\/]+Users[\\/]+[^\\/\s"'`<>|]+/gi, replacement: REDACTED, needles: ['users'], lower: true },
]

const BUILTIN: readonly Redaction[] = SPECS.map(({ pattern, replacement, needles, lower }) => ({
  pattern,
  replacement,
  gate: new RegExp(needles.map(escapeRegExp).join('|'), lower === true ? 'i' : ''),
}))

/**
 * Replaces every built-in secret shape with `[redacted]`. One redaction can complete another's
 * match (a home path inside a URL's userinfo), so it repeats until nothing changes; three passes
 * bound the work, and text without secrets takes one.
 */
export function redactBuiltins(text: string): string {
  let out = text
  for (let pass = 0; pass < 3; pass++) {
    const before = out
    for (const { pattern, replacement, gate } of BUILTIN) if (gate.test(out)) out = out.replace(pattern, replacement)
    if (out === before) break
  }
  return out
}

/** A user's secret: a literal value, or a pattern. */
export type Secret = string | RegExp

/** Literal secrets shorter than this are ignored: redacting "ab" everywhere would shred the text. */
export const MIN_SECRET_LENGTH = 4

const onlyNonEmpty = (match: string) => (match === '' ? '' : REDACTED)

/** How deep JSON text inside JSON text is still searched for a literal: a result rendered as JSON that holds JSON that holds JSON. */
const ESCAPE_LEVELS = 4

/** A literal as JSON writes it inside a string, escaped once and again up to {@link ESCAPE_LEVELS}; none when escaping changes nothing. */
function escapedForms(literal: string): string[] {
  const forms: string[] = []
  let form = literal
  for (let level = 0; level < ESCAPE_LEVELS; level++) {
    const escaped = JSON.stringify(form).slice(1, -1)
    if (escaped === form) break
    forms.push(escaped)
    form = escaped
  }
  return forms
}

/**
 * Compiles a user's secrets once into one replacing function. Literals are matched exactly
 * (after invisible characters are stripped from them, as they are from the text), and as JSON
 * escapes them inside a string, up to four times over (a key with a quote or a backslash in a
 * result rendered as JSON, JSON text inside it included); patterns get the `g` flag and never replace an empty match. A pattern's cost
 * is the pattern's: keep them linear.
 */
export function compileSecrets(secrets: readonly Secret[], clean: (text: string) => string): (text: string) => string {
  const literals: string[] = []
  const patterns: RegExp[] = []
  for (const [i, secret] of secrets.entries()) {
    if (typeof secret === 'string') {
      const literal = clean(secret)
      if (literal.length < MIN_SECRET_LENGTH) continue
      for (const form of [literal, ...escapedForms(literal)]) if (!literals.includes(form)) literals.push(form)
    } else if (secret instanceof RegExp) {
      const flags = secret.flags.replace('y', '')
      patterns.push(new RegExp(secret.source, flags.includes('g') ? flags : `${flags}g`))
    } else {
      throw new TypeError(`secrets[${i}] must be a string or a RegExp, got ${secret === null ? 'null' : typeof secret}`)
    }
  }
  // Longest first, so a secret that contains another is redacted whole.
  literals.sort((a, b) => b.length - a.length)
  if (literals.length === 0 && patterns.length === 0) return (text) => text
  return (text) => {
    let out = text
    for (const literal of literals) if (out.includes(literal)) out = out.split(literal).join(REDACTED)
    for (const pattern of patterns) out = out.replace(pattern, onlyNonEmpty)
    return out
  }
}
