import { type AnyTool, defineTool, parseOptions, TOOL_EFFECTS, type ToolDefinition, type ToolEffect } from '@shallot/core'
import { asSchema, type FlexibleSchema, type InferToolInput, type Tool, type ToolSet } from 'ai'
import { z } from 'zod'
import { type SdkExecutionOptions, sdkCall } from './sdk-call.js'

/** A tool's `reconcile`, as `defineTool` takes it: whether an attempt whose outcome is unknown took effect. */
// biome-ignore lint/suspicious/noExplicitAny: the arguments are the tool's own, typed where the tool is known
export type Reconcile<Input = any> = NonNullable<ToolDefinition<z.ZodType<Input>>['reconcile']>

/** What a shallot tool needs that an AI SDK tool does not say: the rest of `defineTool`'s spec. */
export interface ToShallotToolOptions<Input = unknown> {
  /** What repeating a call does to the world. Default `write`: the AI SDK has no such notion, so nothing is repeated unless you say so. */
  effect?: ToolEffect
  /** For a `write` whose outcome may be unknown: whether an attempt with these arguments took effect (see `defineTool`). */
  reconcile?: Reconcile<Input>
}

export interface ToShallotToolsOptions {
  /** Effect per tool name; tools not listed are `write`. */
  effects?: Readonly<Record<string, ToolEffect>>
  /** `reconcile` per tool name, for writes whose outcome may be unknown. */
  reconcile?: Readonly<Record<string, Reconcile>>
}

const isFunction = (v: unknown) => typeof v === 'function'
const reconcileSchema = z.custom<Reconcile>(isFunction, {
  message: "must be a function (args, context) => { status: 'applied', result } | { status: 'not_applied' } | { status: 'unknown' }",
})
const toolOptionsSchema = z.strictObject({ effect: z.enum(TOOL_EFFECTS).optional(), reconcile: reconcileSchema.optional() })
const toolsOptionsSchema = z.strictObject({
  effects: z.record(z.string(), z.enum(TOOL_EFFECTS)).optional(),
  reconcile: z.record(z.string(), reconcileSchema).optional(),
})

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

/** The SDK's execution options as a tool run by a stack gets them: with the call's `idempotencyKey`. */
export type ShallotToolExecutionOptions = SdkExecutionOptions & { readonly idempotencyKey?: string | undefined }

/**
 * The key of the logical call a tool's `execute` runs for, when a stack with `idempotency()` runs it: the same on
 * every attempt and resume of the call. Forward it upstream (an `Idempotency-Key` header) so a write the service
 * already took is not taken twice. Undefined when no layer gave one, or outside a stack.
 *
 * @example
 * tool({ inputSchema, execute: (args, options) => payments.refund(args, { idempotencyKey: idempotencyKeyOf(options) }) })
 */
export function idempotencyKeyOf(options: unknown): string | undefined {
  const key = typeof options === 'object' && options !== null ? (options as { idempotencyKey?: unknown }).idempotencyKey : undefined
  return typeof key === 'string' ? key : undefined
}

/** What an AI SDK tool may say that a stack's tool does without (its text and schema are carried, the rest is the SDK's). */
const LEFT_TO_THE_SDK = new Set([
  'type',
  'description',
  'title',
  'inputSchema',
  'inputExamples',
  'outputSchema',
  'strict',
  'providerOptions',
  'metadata',
  'execute',
])
/** Fields that change what happens to a call, which a stack cannot keep: refused, never dropped. */
const NOT_KEPT: Record<string, string> = {
  needsApproval: "a stack would run the call without asking; list policy({ rules: [{ action: 'approve', tools: … }] }) in the middleware",
  toModelOutput: "the model would read the stack's text of the value instead; shape the value in execute",
  onInputStart: "a stack never streams a call's arguments, so it would never be called",
  onInputDelta: "a stack never streams a call's arguments, so it would never be called",
  onInputAvailable: 'a stack never calls it; read the arguments in execute',
}

function refuseWhatIsLost(name: string, sdkTool: object): void {
  for (const field of Object.keys(sdkTool)) {
    if (LEFT_TO_THE_SDK.has(field) || (sdkTool as Record<string, unknown>)[field] === undefined) continue
    const why = Object.hasOwn(NOT_KEPT, field) ? NOT_KEPT[field] : 'a stack does not know it'
    throw new TypeError(`toShallotTool("${name}"): the tool's ${field} cannot be kept: ${why} (shallotTools() keeps the SDK tool whole)`)
  }
}

/**
 * Turns one AI SDK tool into a shallot tool: same name and description, its input schema as a zod
 * schema (see {@link inputSchemaOf}), and an `execute` that calls the SDK tool's own with the call's
 * signal and `idempotencyKey` (read it with {@link idempotencyKeyOf}). A streaming `execute` (an async
 * iterable) resolves to its last value.
 *
 * `options` are what `defineTool` takes and the SDK tool does not say: `effect` and `reconcile`; any
 * other field is refused (`OptionsError` naming it and the known ones). So is a field of the SDK tool a
 * stack cannot keep (`needsApproval`, `toModelOutput`, `onInput*`): a TypeError naming it and why.
 *
 * @example
 * const readFile = toShallotTool('read_file', tool({ inputSchema: z.object({ path: z.string() }), execute: read }), { effect: 'read' })
 * const stack = createStack({ middleware: [retry()], tools: [readFile] })
 */
export function toShallotTool<T extends Tool>(name: string, sdkTool: T, options: ToShallotToolOptions<InferToolInput<T>> = {}): AnyTool {
  const o = parseOptions(`toShallotTool("${name}")`, toolOptionsSchema, options)
  if (typeof sdkTool === 'object' && sdkTool !== null) refuseWhatIsLost(name, sdkTool)
  return stackToolOf(name, sdkTool, o)
}

/** The shallot tool a stack runs for an SDK tool, whatever else the SDK tool carries (shallotTools keeps that). */
function stackToolOf(name: string, sdkTool: Tool, o: { effect?: ToolEffect | undefined; reconcile?: Reconcile | undefined }): AnyTool {
  const run = sdkTool.execute as ((input: unknown, options: SdkExecutionOptions) => unknown) | undefined
  if (typeof run !== 'function') {
    throw new TypeError(`toShallotTool("${name}"): the tool has no execute function, so there is nothing for a stack to run`)
  }
  return defineTool({
    reconcile: o.reconcile,
    name,
    // ai 7 allows a description computed from the call's context, which a stack's tool cannot know.
    description: typeof sdkTool.description === 'string' ? sdkTool.description : '',
    input: inputSchemaOf(sdkTool.inputSchema as FlexibleSchema<unknown>),
    effect: o.effect ?? 'write',
    async execute(args, { signal, idempotencyKey }) {
      const call = sdkCall.getStore()
      // Everything the SDK passed (its context field differs between majors), with the attempt's signal and the call's key.
      const output = run.call(sdkTool, args, {
        ...call,
        toolCallId: call?.toolCallId ?? '',
        messages: call?.messages ?? [],
        abortSignal: signal,
        idempotencyKey,
      } as ShallotToolExecutionOptions)
      return isAsyncIterable(output) ? lastValue(output) : output
    },
  }) as AnyTool
}

/**
 * Turns every AI SDK tool that has an `execute` into a shallot tool, for `createStack({ tools })`.
 * Tools without `execute` (client-side or provider-executed) are left out.
 *
 * @example
 * const stack = createStack({ middleware: defaultMiddleware(), tools: toShallotTools(tools, { effects: { read_file: 'read' }, reconcile: { refund: findRefund } }) })
 */
export function toShallotTools(tools: ToolSet, options: ToShallotToolsOptions = {}): AnyTool[] {
  return toolsOf(tools, options, (name, sdkTool, o) => toShallotTool(name, sdkTool, o))
}

/** The stack's tools of a `shallotTools()` set, which keeps each SDK tool whole and runs it through these. */
export function stackToolsOf(tools: ToolSet, options: ToShallotToolsOptions = {}): AnyTool[] {
  return toolsOf(tools, options, stackToolOf)
}

type Convert = (name: string, sdkTool: Tool, options: { effect?: ToolEffect; reconcile?: Reconcile }) => AnyTool

function toolsOf(tools: ToolSet, options: ToShallotToolsOptions, convert: Convert): AnyTool[] {
  const o = parseOptions('toShallotTools()', toolsOptionsSchema, options)
  const effects = o.effects ?? {}
  const reconcilers = o.reconcile ?? {}
  for (const [option, names] of [
    ['effects', Object.keys(effects)],
    ['reconcile', Object.keys(reconcilers)],
  ] as const) {
    for (const name of names) {
      if (!Object.hasOwn(tools, name)) {
        throw new TypeError(`toShallotTools(): ${option} names "${name}", which is not one of the tools (${Object.keys(tools).join(', ')})`)
      }
    }
  }
  return Object.entries(tools)
    .filter(([, sdkTool]) => typeof sdkTool.execute === 'function')
    .map(([name, sdkTool]) => {
      const effect = effects[name]
      const reconcile = reconcilers[name]
      return convert(name, sdkTool as Tool, {
        ...(effect === undefined ? {} : { effect }),
        ...(reconcile === undefined ? {} : { reconcile }),
      })
    })
}
