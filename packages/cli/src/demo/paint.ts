/** Whether `color` paints: on a terminal, unless NO_COLOR or FORCE_COLOR=0. */
export const colorEnabled = process.stdout.isTTY === true && process.env.NO_COLOR === undefined && process.env.FORCE_COLOR !== '0'
const paint = (code: number) => (text: string) => (colorEnabled ? `\x1b[${code}m${text}\x1b[0m` : text)

/** Exactly the sequences `color` writes (and the reset): the only escapes `terminalText` lets through. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching our own escape sequences is the point
export const PAINT_SEQUENCE = /\u001b\[(?:0|1|2|31|32|33|35|36)m/g

/** ANSI colours on a terminal; plain text when piped or when NO_COLOR is set. */
export const color = {
  dim: paint(2),
  bold: paint(1),
  red: paint(31),
  green: paint(32),
  yellow: paint(33),
  cyan: paint(36),
  magenta: paint(35),
}
