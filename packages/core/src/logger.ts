import type { Logger } from './types.js'

const nothing = () => {}

/**
 * A logger that writes nothing and allocates nothing: `child()` returns itself.
 *
 * @example
 * createStack({ tools, logger: silentLogger })
 */
export const silentLogger: Logger = {
  debug: nothing,
  info: nothing,
  warn: nothing,
  error: nothing,
  child: () => silentLogger,
}
