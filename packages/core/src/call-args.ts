import type { z } from 'zod'
import { hashOf } from './canonical.js'
import { invalidArguments, unknownTool } from './tool-refusals.js'
import type { AnyTool, ToolCall } from './types.js'

/** A call's arguments as its tool's schema parsed them, or what refused them (a soft ToolError, or a schema's throw). */
export type ParsedArgs = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown }

/**
 * Input schemas seen to parse synchronously. A schema with an async refinement cannot be parsed in
 * a getter, so a tool's first call (and every call of an async schema) is parsed before the first
 * layer runs; a schema known to be synchronous is parsed on first read of `ctx.args`, or never.
 */
const syncInputs = new WeakSet<z.ZodType>()

function settle(tool: AnyTool, parsed: z.ZodSafeParseResult<unknown>): ParsedArgs {
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, error: invalidArguments(tool, parsed.error) }
}

/** Whether `tool`'s calls must be parsed (awaited) before the onion: its schema is new here, or async. */
export function needsEagerParse(tool: AnyTool): boolean {
  return !syncInputs.has(tool.input)
}

/** Parses now, synchronously; for a schema that turns out to need an async parse, the throw is the answer and the schema is parsed eagerly from the next call on. */
export function parseNow(tool: AnyTool | undefined, call: ToolCall, toolNames: () => readonly string[]): ParsedArgs {
  if (tool === undefined) return { ok: false, error: unknownTool(call.name, toolNames()) }
  try {
    return settle(tool, tool.input.safeParse(call.args))
  } catch (err) {
    syncInputs.delete(tool.input)
    return { ok: false, error: err }
  }
}

/**
 * Parses before the onion, for a schema the stack has not seen parse synchronously: synchronously
 * when it can (and remembers that it can), else (an async refinement) with zod's async parse.
 */
export function parseEagerly(tool: AnyTool, call: ToolCall): ParsedArgs | Promise<ParsedArgs> {
  try {
    const parsed = settle(tool, tool.input.safeParse(call.args))
    syncInputs.add(tool.input)
    return parsed
  } catch {
    // A schema with an async refinement throws from safeParse.
  }
  return tool.input.safeParseAsync(call.args).then(
    (parsed: z.ZodSafeParseResult<unknown>) => settle(tool, parsed),
    (err: unknown): ParsedArgs => ({ ok: false, error: err }),
  )
}

/**
 * The identity of a call: its tool's name and its canonical parsed arguments (defaults filled in,
 * so `{ amount: 5 }` and `{ amount: 5, currency: 'usd' }` are one call when `usd` is the default),
 * hashed. Arguments that do not parse (or a tool that does not exist) are identified by the guarded
 * raw arguments, so a model that keeps sending the same unusable call is still recognised.
 */
export function fingerprintOf(call: ToolCall, parsed: ParsedArgs): string {
  return hashOf([call.name, parsed.ok ? parsed.value : call.args])
}
