import { escapeControls } from '@shallot/core/kit'

/**
 * Thrown for bad flags, unknown commands and missing files: one line, then the usage, exit code 2.
 * What the line quotes (a flag, a run id, a file's key) may hold anything, so each line's control
 * characters are shown as escapes: a message never adds a line nor drives the terminal. Several
 * problems (a config's) are given as one line each.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError'

  constructor(lines: string | readonly string[]) {
    super((typeof lines === 'string' ? [lines] : lines).map((line) => escapeControls(line, { oneLine: true })).join('\n'))
  }
}
