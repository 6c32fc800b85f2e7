/** Where a JSON text first goes wrong, and how. */
export interface JsonSyntaxError {
  /** Offset of the offending character in the text. */
  readonly offset: number
  readonly message: string
}

class Stop extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message)
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const WORDS = ['true', 'false', 'null']

/**
 * Finds the first syntax error of a JSON text that `JSON.parse` refused: V8's messages do not always
 * say where (`Unexpected token ']', ..."retry",` has no position), and a config error must give the line.
 * Returns `undefined` for valid JSON.
 *
 * @example
 * jsonSyntaxError('{"stack": ["retry",]}') // { offset: 19, message: 'a trailing comma before "]"' }
 */
export function jsonSyntaxError(text: string): JsonSyntaxError | undefined {
  let i = 0
  const space = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++
  }
  const expect = (what: string): never => {
    throw new Stop(i, i >= text.length ? `the file ends where ${what} was expected` : `expected ${what}, found ${JSON.stringify(text[i])}`)
  }
  const string = () => {
    const start = i++
    while (i < text.length && text[i] !== '"') {
      const code = text.charCodeAt(i)
      if (code < 0x20) throw new Stop(i, 'a line break or control character inside a string')
      i += text[i] === '\\' ? 2 : 1
    }
    if (i >= text.length) throw new Stop(start, 'a string that never ends (a missing ")')
    i++
  }
  const value = (): void => {
    space()
    const c = text[i]
    if (c === '{' || c === '[') {
      members(c === '{' ? '}' : ']', c === '{')
      return
    }
    if (c === '"') {
      string()
      return
    }
    NUMBER.lastIndex = i
    if (NUMBER.test(text)) {
      i = NUMBER.lastIndex
      return
    }
    const word = WORDS.find((w) => text.startsWith(w, i))
    if (word !== undefined) {
      i += word.length
      return
    }
    if (c === "'") throw new Stop(i, 'a string in single quotes; JSON wants double quotes')
    expect('a value')
  }
  function members(close: string, object: boolean): void {
    i++
    space()
    if (text[i] === close) {
      i++
      return
    }
    for (;;) {
      space()
      if (object) {
        if (text[i] === close) throw new Stop(i, `a trailing comma before "${close}"`)
        if (text[i] !== '"') expect('a property name in double quotes')
        string()
        space()
        if (text[i] !== ':') expect('":" after the property name')
        i++
      } else if (text[i] === close) {
        throw new Stop(i, `a trailing comma before "${close}"`)
      }
      value()
      space()
      if (text[i] === ',') {
        i++
        continue
      }
      if (text[i] === close) {
        i++
        return
      }
      expect(`"," or "${close}"`)
    }
  }
  try {
    value()
    space()
    if (i < text.length) throw new Stop(i, 'more text after the end of the JSON value')
    return undefined
  } catch (err) {
    // Anything else (nesting too deep for the stack) leaves the location unknown.
    return err instanceof Stop ? { offset: err.offset, message: err.message } : undefined
  }
}
