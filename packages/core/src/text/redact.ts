import { REDACTED } from './redacted.js'

// Every pattern below is linear on any input: each starts at a literal or at the start of a run that
// its own character class cannot re-enter (a lookbehind on the same class), and no quantified group
// contains another quantifier that can match the same characters. See docs/decisions/121 and 210.
const TOKEN = '(?<![A-Za-z0-9_-])'
const SECRET_KEYS =
  'password|passwd|pwd|secret|client_secret|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|access_token|refresh_token|auth_token|session_token|token'

const BUILTIN: ReadonlyArray<readonly [RegExp, string]> = [
  // Userinfo in any URL: postgres://u:p@host, https://ghp_x@github.com.
  [/:\/\/[^\s/?#@]+@/g, `://${REDACTED}@`],
  [/\b(bearer[ \t]+)[A-Za-z0-9._~+/=-]{16,}/gi, `$1${REDACTED}`],
  [/(authorization["']?[ \t]*[:=][ \t]*["']?)(?:(?:bearer|basic|token|digest)[ \t]+)?[^\s"',;]+/gi, `$1${REDACTED}`],
  [new RegExp(`((?:${SECRET_KEYS})=)[^\\s&"',;]+`, 'gi'), `$1${REDACTED}`],
  [new RegExp(`("(?:${SECRET_KEYS})"[ \\t]*:[ \\t]*")[^"\\\\\\n]+`, 'gi'), `$1${REDACTED}`],
  [/-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[A-Za-z0-9+/=\s]*/g, REDACTED],
  // OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-) keys.
  [new RegExp(`${TOKEN}sk-[A-Za-z0-9_-]{16,}`, 'g'), REDACTED],
  [new RegExp(`${TOKEN}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{8,}`, 'g'), REDACTED],
  [new RegExp(`${TOKEN}whsec_[A-Za-z0-9]{16,}`, 'g'), REDACTED],
  [new RegExp(`${TOKEN}(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`, 'g'), REDACTED],
  // AWS access key ids (user, temporary, role, group and other principal prefixes).
  [new RegExp(`${TOKEN}(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|APKA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])`, 'g'), REDACTED],
  // Slack bot, user, app-level and config tokens, and incoming-webhook URLs.
  [new RegExp(`${TOKEN}(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,})`, 'g'), REDACTED],
  [/hooks\.slack\.com\/services\/[A-Za-z0-9/_-]+/g, `hooks.slack.com/services/${REDACTED}`],
  [new RegExp(`${TOKEN}AIza[A-Za-z0-9_-]{30,}`, 'g'), REDACTED],
  // A JWT, or its first two parts when a cut took the signature.
  [new RegExp(`${TOKEN}eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}(?:\\.[A-Za-z0-9_-]*)?`, 'g'), REDACTED],
  // E-mail addresses: a local part starting where its class starts, an @, dotted labels.
  [/(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])/g, REDACTED],
  // Private, loopback and link-local IPv4: 10/8, 127/8, 172.16/12, 192.168/16, 169.254/16.
  [/(?<![\d.])(?:(?:10|127)\.\d{1,3}|172\.(?:1[6-9]|2\d|3[01])|192\.168|169\.254)\.\d{1,3}\.\d{1,3}(?!\.?\d)/g, REDACTED],
  // IPv6 loopback, unique local (fc00::/7) and link-local (fe80::/10).
  [/(?<![\w:])(?:::1(?![\w:])|(?:f[cd][0-9a-f]{2}|fe[89ab][0-9a-f]):[0-9a-f:]*)/gi, REDACTED],
  // Internal host names: *.internal, *.local, *.lan, *.corp, *.intranet, *.localdomain, *.home.arpa.
  [/(?<![\w.-])[a-z0-9][a-z0-9.-]*\.(?:internal|local|localdomain|lan|corp|intranet|home\.arpa)(?![\w-]|\.[\w-])/gi, REDACTED],
  // Home directories: the user's name goes, the path the model asked about stays. No lookbehind, so a
  // web path like /home/feed is redacted too: better a lost word than a name that survives.
  [/\/(?:home|Users)\/[\w.$-]+/g, REDACTED],
  [/\b[A-Za-z]:[\\/]+Users[\\/]+[^\\/\s"'`<>|]+/gi, REDACTED],
]

/**
 * Replaces every built-in secret shape with `[redacted]`. One redaction can complete another's
 * match (a home path inside a URL's userinfo), so it repeats until nothing changes; three passes
 * bound the work, and text without secrets takes one.
 */
export function redactBuiltins(text: string): string {
  let out = text
  for (let pass = 0; pass < 3; pass++) {
    const before = out
    for (const [pattern, replacement] of BUILTIN) out = out.replace(pattern, replacement)
    if (out === before) break
  }
  return out
}

/** A user's secret: a literal value, or a pattern. */
export type Secret = string | RegExp

/** Literal secrets shorter than this are ignored: redacting "ab" everywhere would shred the text. */
export const MIN_SECRET_LENGTH = 4

const onlyNonEmpty = (match: string) => (match === '' ? '' : REDACTED)

/**
 * Compiles a user's secrets once into one replacing function. Literals are matched exactly
 * (after invisible characters are stripped from them, as they are from the text); patterns get the
 * `g` flag and never replace an empty match. A pattern's cost is the pattern's: keep them linear.
 */
export function compileSecrets(secrets: readonly Secret[], clean: (text: string) => string): (text: string) => string {
  const literals: string[] = []
  const patterns: RegExp[] = []
  for (const [i, secret] of secrets.entries()) {
    if (typeof secret === 'string') {
      const literal = clean(secret)
      if (literal.length >= MIN_SECRET_LENGTH && !literals.includes(literal)) literals.push(literal)
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
