import { UsageError } from '../usage.js'

/**
 * A command line as a shell would split it, without a shell: words apart on whitespace, `'…'` taken
 * verbatim, `"…"` with `\"` and `\\` escaped, a backslash outside quotes escaping the next character.
 * No globbing, variables or pipes: the words go to `spawn` as they are, so nothing is interpreted twice.
 *
 * @example
 * splitCommand(`npx -y @modelcontextprotocol/server-filesystem "/tmp/my project"`)
 * // ['npx', '-y', '@modelcontextprotocol/server-filesystem', '/tmp/my project']
 */
export function splitCommand(line: string, what: string): string[] {
  const words: string[] = []
  let word: string | undefined
  const add = (text: string | undefined) => {
    word = (word ?? '') + (text ?? '')
  }
  let quote: "'" | '"' | undefined
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string
    if (quote === "'") {
      if (c === "'") quote = undefined
      else add(c)
    } else if (quote === '"') {
      if (c === '"') quote = undefined
      else if (c === '\\' && (line[i + 1] === '"' || line[i + 1] === '\\')) add(line[++i])
      else add(c)
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word)
      word = undefined
    } else if (c === "'" || c === '"') {
      quote = c
      add('')
    } else if (c === '\\' && i + 1 < line.length) {
      add(line[++i])
    } else {
      add(c)
    }
  }
  if (quote !== undefined) throw new UsageError(`${what}: the quote ${quote} is never closed in ${JSON.stringify(line)}`)
  if (word !== undefined) words.push(word)
  if (words.length === 0)
    throw new UsageError(
      `${what} is empty; give the command that starts the server, e.g. "npx -y @modelcontextprotocol/server-filesystem ."`,
    )
  return words
}
