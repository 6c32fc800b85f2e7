// Characters a shell word must not hold raw: C0 and C1 controls (an escape that redraws the terminal, a
// newline that ends the command) and the bidi and zero-width characters that make a line read otherwise.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/

/**
 * One word for a POSIX shell: as it is when it is plainly safe (`run.db`, `openai:gpt-4o-mini`),
 * else in single quotes (`'my runs/run.db'`, a `'` written `'\''`), and a word holding a control or
 * an invisible character in `$'…'` with each such character escaped (`$'a\x1bb'`; bash, zsh, ksh and
 * POSIX.1-2024 sh), so the command is one printable line that pastes back as the same word.
 *
 * @example
 * ['shallot', 'resume', 'run-1', '--checkpoints', shellQuote("/tmp/Bob's runs/run.db")].join(' ')
 * // "shallot resume run-1 --checkpoints '/tmp/Bob'\\''s runs/run.db'"
 */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_./:@=-]+$/.test(word)) return word
  if (!UNPRINTABLE.test(word)) return `'${word.replace(/'/g, `'\\''`)}'`
  let quoted = ''
  for (const c of word) {
    const code = c.codePointAt(0) as number
    if (c === '\\' || c === "'") quoted += `\\${c}`
    else if (!UNPRINTABLE.test(c)) quoted += c
    else quoted += code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
  }
  return `$'${quoted}'`
}
