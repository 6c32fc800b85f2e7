import { type AnyTool, defineTool, type ToolEffect } from '@shallot/core'
import { asSchema, type FlexibleSchema, type Tool, type ToolSet } from 'ai'
import { z } from 'zod'
import { type SdkExecutionOptions, sdkCall } from './sdk-call.js'

export interface ToShallotToolOptions {
  /** What repeating a call does to the world. Default `write`: the AI SDK has no such notion, so nothing is repeated unless you say so. */
  effect?: ToolEffect
}

export interface ToShallotToolsOptions {
  /** Effect per tool name; tools not listed are `write`. */
  effects?: Readonly<Record<string, ToolEffect>>
}

const isZod4 = (schema: unknown): schema is z.ZodType =>
  typeof schema === 'object' && schema !== null && '_zod' in schema && typeof (schema as { safeParse?: unknown }).safeParse === 'function'

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> => typeof (value as { then?: unknown } | null)?.then === 'function'

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof value === 'object' && value !== null && Symbol.asyncIterator in value

/**
 * The zod schema shallot validates a tool's input with. A zod 4 schema is used as it is; a schema
 * with a `validate` function (zod 3, Standard Schema, `jsonSchema(s, { validate })`) is run through
 * it; a bare `jsonSchema(s)` is converted with `z.fromJSONSchema`. A JSON Schema the converter
 * cannot read, or one only known asynchronously, validates nothing (the tool still gets the input).
 */
export function inputSchemaOf(schema: FlexibleSchema<unknown>): z.ZodType {
  if (isZod4(schema)) return schema
  const sdkSchema = asSchema(schema)
  const validate = sdkSchema.validate
  if (validate !== undefined) {
    return z.unknown().transform(async (value, ctx) => {
      const checked = await validate(value)
      if (checked.success) return checked.value
      ctx.addIssue({ code: 'custom', message: checked.error.message, input: value })
      return z.NEVER
    })
  }
  const json = sdkSchema.jsonSchema
  if (isPromiseLike(json)) return z.unknown()
  try {
    return z.fromJSONSchema(json as Parameters<typeof z.fromJSONSchema>[0])
  } catch {
    return z.unknown()
  }
}

async function lastValue(stream: AsyncIterable<unknown>): Promise<unknown> {
  let last: unknown
  for await (const value of stream) last = value
  return last
}

/**
 * Turns one AI SDK tool into a shallot tool: same name and description, its input schema as a zod
 * schema (see {@link inputSchemaOf}), and an `execute` that calls the SDK tool's own with the call's
 * signal. A streaming `execute` (an async iterable) resolves to its last value.
 *
 * @example
 * const readFile = toShallotTool('read_file', tool({ inputSchema: z.object({ path: z.string() }), execute: read }), { effect: 'read' })
 * const stack = createStack({ middleware: [retry()], tools: [readFile] })
 */
export function toShallotTool(name: string, sdkTool: Tool, options: ToShallotToolOptions = {}): AnyTool {
  const run = sdkTool.execute as ((input: unknown, options: SdkExecutionOptions) => unknown) | undefined
  if (typeof run !== 'function') {
    throw new TypeError(`toShallotTool("${name}"): the tool has no execute function, so there is nothing for a stack to run`)
  }
  return defineTool({
    name,
    // ai 7 allows a description computed from the call's context, which a stack's tool cannot know.
    description: typeof sdkTool.description === 'string' ? sdkTool.description : '',
    input: inputSchemaOf(sdkTool.inputSchema as FlexibleSchema<unknown>),
    effect: options.effect ?? 'write',
    async execute(args, { signal }) {
      const call = sdkCall.getStore()
      // Everything the SDK passed (its context field differs between majors), with the attempt's signal.
      const output = run.call(sdkTool, args, {
        ...call,
        toolCallId: call?.toolCallId ?? '',
        messages: call?.messages ?? [],
        abortSignal: signal,
      } as SdkExecutionOptions)
      return isAsyncIterable(output) ? lastValue(output) : output
    },
  }) as AnyTool
}

/**
 * Turns every AI SDK tool that has an `execute` into a shallot tool, for `createStack({ tools })`.
 * Tools without `execute` (client-side or provider-executed) are left out.
 *
 * @example
 * const stack = createStack({ middleware: defaultMiddleware(), tools: toShallotTools(tools, { effects: { read_file: 'read' } }) })
 */
export function toShallotTools(tools: ToolSet, options: ToShallotToolsOptions = {}): AnyTool[] {
  const effects = options.effects ?? {}
  for (const name of Object.keys(effects)) {
    if (!Object.hasOwn(tools, name)) {
      throw new TypeError(`toShallotTools(): effects names "${name}", which is not one of the tools (${Object.keys(tools).join(', ')})`)
    }
  }
  return Object.entries(tools)
    .filter(([, sdkTool]) => typeof sdkTool.execute === 'function')
    .map(([name, sdkTool]) => {
      const effect = effects[name]
      return toShallotTool(name, sdkTool as Tool, effect === undefined ? {} : { effect })
    })
}
