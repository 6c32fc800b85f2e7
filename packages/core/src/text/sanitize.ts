import { stripInvisible, stripInvisibleAndControls } from './invisible.js'
import { compileSecrets, redactBuiltins, type Secret } from './redact.js'
import { stripStackFrames } from './strip-stack-frames.js'
import { cutPoint, truncateFrom } from './truncate.js'

/** Options of {@link sanitize} and {@link createSanitizer}. */
export interface SanitizeOptions {
  /**
   * Your own secrets, always redacted: literal values (API keys from your environment; under 4
   * characters they are ignored) or patterns (`/acct_[0-9]{8}/`; a pattern's cost is the pattern's).
   */
  secrets?: readonly Secret[]
}

/** A sanitizer compiled once, with its secrets. */
export interface Sanitizer {
  /**
   * Error text (a message, a hint): invisible characters, ANSI escapes, C0 controls and stack frames
   * removed, secrets redacted, capped at `maxLength` (default: no cap) with the truncation marker.
   */
  text(text: string, maxLength?: number): string
  /**
   * Successful output: invisible characters removed, control characters kept; the sanitizer's own
   * secrets redacted always, the built-in secret shapes (e-mails, private addresses, tokens) only
   * when `redact` is true; capped at `maxLength`.
   */
  output(text: string, maxLength: number, redact: boolean): string
}

/** Past this much beyond the cap, input is cut before any pattern runs: work stays bounded by the cap, not the input. */
function windowOf(max: number): number {
  return max * 2 + 1024
}

/**
 * Compiles a {@link Sanitizer}: the user's secrets become one function once, so each call costs one
 * pass per pattern over text already bounded by its cap. The stack builds one from `secrets` and the
 * secrets its layers declare; every text the model reads goes through it.
 *
 * @example
 * const sanitizer = createSanitizer({ secrets: [process.env.STRIPE_KEY ?? '', /acct_[0-9]{8}/] })
 * sanitizer.text('charge failed for acct_12345678') // 'charge failed for [redacted]'
 */
export function createSanitizer(options: SanitizeOptions = {}): Sanitizer {
  const secrets = compileSecrets(options.secrets ?? [], stripInvisible)

  // One order for every text: invisible characters go first, so every pattern sees the text the model
  // will read (a key split by a zero-width space is matched whole); the cap comes last, so a secret
  // that straddles it is redacted whole, never cut in half.
  function clean(source: string, max: number, strip: (text: string) => string, builtins: boolean): string {
    const window = windowOf(max)
    const cut = source.length > window
    let out = cut ? source.slice(0, cutPoint(source, window)) : source
    out = secrets(strip(out))
    if (builtins) out = redactBuiltins(out)
    return truncateFrom(out, max, source.length, cut)
  }

  return {
    text(text, maxLength = Number.POSITIVE_INFINITY) {
      const source = typeof text === 'string' ? text : String(text)
      return clean(source, maxLength, (t) => stripStackFrames(stripInvisibleAndControls(t)), true)
    },
    output(text, maxLength, redact) {
      return clean(text, maxLength, stripInvisible, redact)
    },
  }
}

const plain = createSanitizer()

/**
 * Makes text safe to show a model: strips invisible characters (bidi controls, zero-width, Unicode
 * tag characters), ANSI escapes, C0 controls and stack-frame lines; replaces secrets (API keys, AWS
 * key ids, GitHub and Slack tokens, JWTs, `Authorization` values, passwords in URLs), private IPs,
 * internal host names, home-directory user names and e-mail addresses with `[redacted]`; and caps the
 * length with the truncation marker. What the model needs to act stays: `file src/mian.rs not found`
 * comes back unchanged. Linear time on any input. The stack already applies this to every text the
 * model reads; call it for text you show a model yourself.
 *
 * @example
 * sanitize('connect ECONNREFUSED 10.0.0.5:5432 (postgres://app:hunter2@10.0.0.5/db)')
 * // 'connect ECONNREFUSED [redacted]:5432 (postgres://[redacted]@[redacted]/db)'
 */
export function sanitize(text: string, options: SanitizeOptions & { maxLength?: number } = {}): string {
  const sanitizer = options.secrets === undefined || options.secrets.length === 0 ? plain : createSanitizer(options)
  return sanitizer.text(text, options.maxLength)
}
