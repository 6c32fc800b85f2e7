import { hashOf } from '@shallot/core/kit'

/**
 * Identifies a call by what it asks for: the tool's name and its canonical arguments, hashed; the
 * formula of `ctx.fingerprint`, which the layer reads (there, the arguments are the schema-parsed
 * ones, so a default filled in does not make another call). Key order, whitespace in JSON-text
 * arguments and number spellings (`1`, `1.0`, `1e0`) do not change it; any other difference does.
 *
 * @example
 * fingerprint('read_file', { path: 'a', n: 1 }) === fingerprint('read_file', { n: 1.0, path: 'a' }) // true
 */
export function fingerprint(toolName: string, args: unknown): string {
  return hashOf([toolName, args])
}
