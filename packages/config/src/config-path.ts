/** One step of a path into the document: an object key or a list index. */
export type PathKey = string | number

const IDENTIFIER = /^[A-Za-z_$][\w$-]*$/

/**
 * `['stack', 3, 'retry', 'baseMs']` → `stack[3].retry.baseMs`; keys that are not plain names are quoted.
 *
 * @example
 * formatPath(['stack', 2, '@acme/rate-limit', 'rps']) // 'stack[2]["@acme/rate-limit"].rps'
 */
export function formatPath(path: readonly PathKey[]): string {
  let text = ''
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`
    else if (IDENTIFIER.test(key)) text += text === '' ? key : `.${key}`
    else text += `[${JSON.stringify(key)}]`
  }
  return text
}
