/** Options for {@link sanitizeText}. */
export interface SanitizeTextOptions {
  /** Longest text returned, marker included. Default 500; at least 40. */
  maxLength?: number
  /** Literal strings (API keys from your environment, say) that are always redacted. Strings under 4 characters are ignored. */
  secrets?: readonly string[]
}

/**
 * What every redacted span becomes.
 *
 * @example
 * sanitizeText('ghp_0123456789abcdefghijABCDEFGHIJ') === REDACTED // true
 */
export const REDACTED = '[redacted]'

const DEFAULT_MAX_LENGTH = 500
const MIN_MAX_LENGTH = 40

// Tag block (U+E0000–U+E007F), zero-width and word joiners (U+200B–U+200F, U+2060–U+2064, U+FEFF),
// bidi controls (U+061C, U+202A–U+202E, U+2066–U+2069), U+180E, ANSI escape sequences and the
// C0 controls other than tab and newline. All single-character classes: linear.
const INVISIBLE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
  /\u001b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|[\u{E0000}-\u{E007F}\u200B-\u200F\u2060-\u2064\uFEFF\u061C\u202A-\u202E\u2066-\u2069\u180E]|[\u0000-\u0008\u000B-\u001F\u007F]/gu

// Every pattern below is linear on any input: each starts at a literal or at the start of a run that
// its own character class cannot re-enter (a lookbehind on the same class), and no quantified group
// contains another quantifier that can match the same characters. See docs/decisions/121.
const TOKEN = '(?<![A-Za-z0-9_-])'
const REDACTIONS: ReadonlyArray<readonly [RegExp, string]> = [
  // Userinfo in any URL: postgres://u:p@host, https://ghp_x@github.com.
  [/:\/\/[^\s/?#@]+@/g, `://${REDACTED}@`],
  [/\b(bearer[ \t]+)[A-Za-z0-9._~+/=-]{16,}/gi, `$1${REDACTED}`],
  [/(authorization["']?[ \t]*[:=][ \t]*["']?)(?:(?:bearer|basic|token|digest)[ \t]+)?[^\s"',;]+/gi, `$1${REDACTED}`],
  [
    /((?:password|passwd|pwd|secret|client_secret|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|access_token|refresh_token|auth_token|session_token|token)=)[^\s&"',;]+/gi,
    `$1${REDACTED}`,
  ],
  [
    /("(?:password|passwd|secret|client_secret|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|access_token|refresh_token|auth_token|token)"[ \t]*:[ \t]*")[^"\\\n]+/gi,
    `$1${REDACTED}`,
  ],
  [/-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[A-Za-z0-9+/=\s]*/g, REDACTED],
  [new RegExp(`${TOKEN}sk-[A-Za-z0-9_-]{16,}`, 'g'), REDACTED],
  [new RegExp(`${TOKEN}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{8,}`, 'g'), REDACTED],
  [new RegExp(`${TOKEN}whsec_[A-Za-z0-9]{16,}`, 'g'), REDACTED],
  [new RegExp(`${TOKEN}(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`, 'g'), REDACTED],
  [new RegExp(`${TOKEN}(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])`, 'g'), REDACTED],
  [new RegExp(`${TOKEN}xox[abposr]-[A-Za-z0-9-]{10,}`, 'g'), REDACTED],
  [new RegExp(`${TOKEN}AIza[A-Za-z0-9_-]{30,}`, 'g'), REDACTED],
  [new RegExp(`${TOKEN}eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]*`, 'g'), REDACTED],
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

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff
}

/** Cuts at most `max` characters, never between a surrogate pair, before a whitespace when one is near. */
function precut(text: string, max: number): string {
  let end = max
  for (let i = max; i > max - 256; i--) {
    const code = text.charCodeAt(i)
    if (code === 0x20 || code === 0x0a || code === 0x09) {
      end = i
      break
    }
  }
  if (isHighSurrogate(text.charCodeAt(end - 1))) end--
  return text.slice(0, end)
}

function cap(text: string, max: number, originalLength: number, cut: boolean): string {
  if (!cut && text.length <= max) return text
  const marker = `… [truncated from ${originalLength} chars]`
  let end = Math.max(0, max - marker.length)
  if (isHighSurrogate(text.charCodeAt(end - 1))) end--
  let kept = text.slice(0, end)
  // Never end on half a "[redacted]": it reads like a leak even though it is not one.
  const open = kept.lastIndexOf('[')
  if (open >= 0 && kept.length - open < REDACTED.length && REDACTED.startsWith(kept.slice(open))) kept = kept.slice(0, open)
  return kept + marker
}

function normalizeMax(value: number | undefined): number {
  if (value === undefined || Number.isNaN(value)) return DEFAULT_MAX_LENGTH
  return Math.max(MIN_MAX_LENGTH, Math.floor(value))
}

/**
 * Makes text safe to show a model: strips invisible and control characters (Unicode tag block,
 * zero-width, bidi controls, ANSI escapes), replaces secrets, private addresses, internal host names
 * and home-directory user names with `[redacted]`, and caps the length with a visible marker.
 * What the model needs to act stays: `file src/mian.rs not found` comes back unchanged.
 * Linear time on any input; input far past the cap is cut before any pattern runs.
 *
 * @example
 * sanitizeText('connect ECONNREFUSED 10.0.0.5:5432 (postgres://app:hunter2@10.0.0.5/db)')
 * // 'connect ECONNREFUSED [redacted]:5432 (postgres://[redacted]@[redacted]/db)'
 */
export function sanitizeText(text: string, options: SanitizeTextOptions = {}): string {
  const max = normalizeMax(options.maxLength)
  const source = typeof text === 'string' ? text : String(text)
  const window = max * 2 + 1024
  const cut = source.length > window
  let out = cut ? precut(source, window) : source
  out = out.replace(INVISIBLE, '')
  if (options.secrets !== undefined) {
    for (const secret of options.secrets) {
      if (typeof secret === 'string' && secret.length >= 4) out = out.split(secret).join(REDACTED)
    }
  }
  // One redaction can complete another's match (a home path inside a URL's userinfo), so repeat
  // until nothing changes; three passes bound the work, and text without secrets takes one.
  for (let pass = 0; pass < 3; pass++) {
    const before = out
    for (const [pattern, replacement] of REDACTIONS) out = out.replace(pattern, replacement)
    if (out === before) break
  }
  return cap(out, max, source.length, cut)
}
