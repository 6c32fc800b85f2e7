// A stack frame as Node prints it: "    at fn (/path/file.js:1:2)", "    at /path/file.js:1:2", "    at async Promise.all (index 0)",
// "    at new Foo (<anonymous>)". Indented, "at ", and ending in a location; "  at least 3 items" is prose.
const FRAME_END = /(?::\d+:\d+\)?|\((?:<anonymous>|native|index \d+)\))$/

function isFrame(line: string): boolean {
  const code = line.charCodeAt(0)
  if (code !== 0x20 && code !== 0x09) return false
  const trimmed = line.trim()
  return trimmed.startsWith('at ') && FRAME_END.test(trimmed.slice(-40))
}

/**
 * Drops stack-frame lines (`    at fn (/app/src/x.ts:3:9)`) from a message: the model acts on the
 * message, never on the trace, and frames carry file paths. Text with no newline comes back as is.
 *
 * @example
 * stripStackFrames('boom\n    at run (/app/x.js:1:2)') // 'boom'
 */
export function stripStackFrames(text: string): string {
  if (!text.includes('\n')) return text
  const lines = text.split('\n')
  const kept = lines.filter((line) => !isFrame(line))
  return kept.length === lines.length ? text : kept.join('\n').trimEnd()
}
