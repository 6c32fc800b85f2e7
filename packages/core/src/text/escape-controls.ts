// C0 controls but tab and newline, DEL and the C1 controls (U+0080–U+009F: U+009B is an 8-bit CSI),
// the bidi controls that reorder what a reader sees, and the Unicode line separators: what a terminal
// obeys instead of showing (ESC starts "set the title", "clear the screen", "move the cursor").
const ALWAYS = '\\u0000-\\u0008\\u000B-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069'
const IN_LINES = `[${ALWAYS}]`
const IN_ONE_LINE = `[\\t\\n${ALWAYS}]`
const FIND = { lines: new RegExp(IN_LINES), oneLine: new RegExp(IN_ONE_LINE) }
const ALL = { lines: new RegExp(IN_LINES, 'g'), oneLine: new RegExp(IN_ONE_LINE, 'g') }
const NAMED: Readonly<Record<string, string>> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' }

function visible(char: string): string {
  const named = NAMED[char]
  if (named !== undefined) return named
  const code = char.charCodeAt(0)
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
}

/**
 * Text safe to print on a terminal: every control character it would obey is shown as its escape
 * instead (`\x1b`, `\r`, `\x9b`, `\u202e`), so what is printed is what a reader sees. Newlines and
 * tabs stay unless `oneLine` is set, for text that promises one line (an error, a quoted value).
 * Returns the same string when there is nothing to escape.
 *
 * @example
 * escapeControls('ok\x1b]0;pwned\x07') // 'ok\\x1b]0;pwned\\x07'
 * escapeControls('a\nb', { oneLine: true }) // 'a\\nb'
 */
export function escapeControls(text: string, options: { readonly oneLine?: boolean } = {}): string {
  const mode = options.oneLine === true ? 'oneLine' : 'lines'
  return FIND[mode].test(text) ? text.replace(ALL[mode], visible) : text
}
