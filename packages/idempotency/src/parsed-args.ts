import type { AnyTool } from '@shallot/core'

/**
 * The call's arguments as the tool's schema parses them (defaults filled in, so `{ amount: 5 }`
 * and `{ amount: 5, currency: 'usd' }` are one call when `usd` is the default), or `undefined`
 * when the schema refuses them: the dispatcher will answer `invalid_arguments` and nothing runs,
 * so no record is needed.
 *
 * @example
 * const parsed = await parsedArgs(tool, ctx.call.args)
 * if (parsed === undefined) return next()
 */
export async function parsedArgs(tool: AnyTool, args: unknown): Promise<{ readonly args: unknown } | undefined> {
  let result: { success: boolean; data?: unknown }
  try {
    result = tool.input.safeParse(args)
  } catch {
    // Schemas with async refinements cannot be parsed synchronously.
    result = await tool.input.safeParseAsync(args)
  }
  return result.success ? { args: result.data } : undefined
}
