import { escapeControls } from '@shallot/core/kit'
import type { CliIO } from './cli-io.js'
import { colorEnabled, PAINT_SEQUENCE } from './demo/paint.js'

/**
 * A line as the terminal should show it: every control character (the escapes that set the title,
 * clear the screen or move the cursor, a carriage return, C1 and bidi controls) shown as its escape
 * text (`\x1b`), newlines kept. When `color` paints, its own colour sequences are kept too; they can
 * only colour text, never hide, move or clear it.
 *
 * @example
 * terminalText('done\x1b]0;pwned\x07') // 'done\\x1b]0;pwned\\x07'
 */
export function terminalText(text: string): string {
  if (!colorEnabled) return escapeControls(text)
  let shown = ''
  let from = 0
  for (const match of text.matchAll(PAINT_SEQUENCE)) {
    shown += escapeControls(text.slice(from, match.index)) + match[0]
    from = match.index + match[0].length
  }
  return shown + escapeControls(text.slice(from))
}

/**
 * The same `io` with every printed line passed through {@link terminalText}: the one way the CLI
 * prints, so tool output, the model's text, reports, prompts and errors are all covered. The input
 * is read through (not copied), so an untouched stdin is never opened.
 *
 * @example
 * const safe = terminalIO({ out: console.log, err: console.error })
 */
export function terminalIO(io: CliIO): CliIO {
  const safe: CliIO = Object.create(io)
  safe.out = (line) => io.out(terminalText(line))
  safe.err = (line) => io.err(terminalText(line))
  return safe
}
