import type { z } from 'zod'
import { type ReconcileAnswer, TOOL_EFFECTS, type ToolDefinition, type ToolEffect, type ToolExecuteContext } from './types.js'

export interface ToolSpec<Input extends z.ZodType, Output> {
  name: string
  description: string
  input: Input
  /** Defaults to `write`: the safe assumption for a tool nobody classified. */
  effect?: ToolEffect
  execute(args: z.output<Input>, context: ToolExecuteContext): Output | Promise<Output>
  /** Optional: whether an attempt whose outcome was unknown took effect (see `ToolDefinition.reconcile`). */
  reconcile?:
    | ((args: z.output<Input>, context: ToolExecuteContext) => ReconcileAnswer<Output> | Promise<ReconcileAnswer<Output>>)
    | undefined
}

const NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/
const EFFECTS: readonly ToolEffect[] = TOOL_EFFECTS

/**
 * Declares a tool. `execute` receives arguments already validated by `input`.
 *
 * @example
 * const readFile = defineTool({
 *   name: 'read_file',
 *   description: 'Read a UTF-8 text file',
 *   input: z.object({ path: z.string() }),
 *   effect: 'read',
 *   execute: async ({ path }, { signal }) => fs.readFile(path, { encoding: 'utf8', signal }),
 * })
 */
export function defineTool<Input extends z.ZodType, Output>(spec: ToolSpec<Input, Output>): ToolDefinition<Input, Output> {
  if (typeof spec !== 'object' || spec === null)
    throw new TypeError('defineTool() takes an object { name, description, input, effect, execute }')
  if (typeof spec.name !== 'string' || !NAME.test(spec.name)) {
    throw new TypeError(
      `defineTool(): name must be 1-64 letters, digits, "_", "-" or ".", starting with a letter; got ${JSON.stringify(spec.name)}`,
    )
  }
  const where = `defineTool("${spec.name}")`
  if (typeof spec.description !== 'string') throw new TypeError(`${where}: description must be a string`)
  if (typeof spec.input !== 'object' || spec.input === null || typeof (spec.input as { safeParse?: unknown }).safeParse !== 'function') {
    throw new TypeError(`${where}: input must be a zod schema, e.g. z.object({ path: z.string() })`)
  }
  const effect = spec.effect ?? 'write'
  if (!EFFECTS.includes(effect))
    throw new TypeError(`${where}: effect must be "read", "idempotent" or "write"; got ${JSON.stringify(effect)}`)
  if (typeof spec.execute !== 'function') throw new TypeError(`${where}: execute must be a function (args, context) => result`)
  const { name, description, input, execute, reconcile } = spec
  if (reconcile === undefined) return Object.freeze({ name, description, input, effect, execute })
  if (typeof reconcile !== 'function')
    throw new TypeError(
      `${where}: reconcile must be a function (args, context) => { status: 'applied', result } | { status: 'not_applied' } | { status: 'unknown' }`,
    )
  return Object.freeze({ name, description, input, effect, execute, reconcile })
}
