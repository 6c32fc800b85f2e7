import { z } from 'zod'
import type { ErrorRenderer } from './render.js'
import type { Stack, StackLimits } from './stack.js'
import type { Clock, Logger, Middleware } from './types.js'

const isObject = (v: unknown) => typeof v === 'object' && v !== null
const isFunction = (v: unknown) => typeof v === 'function'
const custom = <T>(what: string, check: (v: unknown) => boolean) => z.custom<T>(check, { message: `must be ${what}` })

/**
 * The zod fields of "either a ready stack, or what to build one from", for hosts that put a stack in
 * front of another framework's tools (the AI SDK, LangChain, MCP adapters). Spread it into a schema
 * and add {@link onlyWithoutStack} so parts given next to a ready stack are refused, not ignored.
 *
 * @example
 * const schema = z.strictObject({ ...stackSourceShape, effects: z.record(z.string(), z.string()).optional() })
 *   .superRefine(onlyWithoutStack(['effects']))
 */
export const stackSourceShape = {
  /** A ready stack from `createStack()`. */
  stack: custom<Stack>('a stack from createStack()', (v) => isObject(v) && isFunction((v as Stack).dispatch)).optional(),
  /** The layers to build a stack from, outermost first. */
  middleware: custom<Middleware | readonly Middleware[]>(
    'a middleware or an array of middlewares',
    (v) => isFunction(v) || (Array.isArray(v) && v.every(isFunction)),
  ).optional(),
  clock: custom<Clock>('a Clock { now(), sleep(ms, signal) }', (v) => isObject(v) && isFunction((v as Clock).now)).optional(),
  random: custom<() => number>('a function () => number', isFunction).optional(),
  logger: custom<Logger>('a pino-compatible logger', (v) => isObject(v) && isFunction((v as Logger).child)).optional(),
  limits: custom<StackLimits>('stack limits { maxArgsBytes, maxArgsDepth, maxOutputChars }', isObject).optional(),
  renderError: custom<ErrorRenderer>('a function (error, call) => string', isFunction).optional(),
}

const BUILD_KEYS = ['middleware', 'clock', 'random', 'logger', 'limits', 'renderError'] as const

/**
 * A zod refinement: with `stack` given, every part that only matters when building a stack (the
 * shape's own, plus `extraKeys`) is an error naming the option, never silently ignored.
 */
export function onlyWithoutStack(extraKeys: readonly string[] = []) {
  const keys = [...BUILD_KEYS, ...extraKeys]
  return (options: Record<string, unknown>, issues: z.RefinementCtx): void => {
    if (options.stack === undefined) return
    for (const key of keys) {
      if (options[key] !== undefined) {
        issues.addIssue({ code: 'custom', path: [key], message: 'belongs to the stack; with `stack`, set it where you built the stack' })
      }
    }
  }
}
