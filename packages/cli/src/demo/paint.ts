const enabled = process.stdout.isTTY === true && process.env.NO_COLOR === undefined && process.env.FORCE_COLOR !== '0'
const paint = (code: number) => (text: string) => (enabled ? `\x1b[${code}m${text}\x1b[0m` : text)

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
