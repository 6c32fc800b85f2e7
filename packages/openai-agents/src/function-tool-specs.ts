import { AsyncLocalStorage } from 'node:async_hooks'
import type { FunctionTool } from '@openai/agents'
import { type AnyTool, defineTool, type ToolDefinition, type ToolEffect, toolInputSchema } from '@shallot/core'
import { z } from 'zod'

/** One tool, written as you would pass it to the SDK's `tool()`, plus what repeating it does to the world. */
export interface ShallotFunctionToolSpec<Args = unknown> {
  name: string
  description: string
  /** A zod 4 schema of the arguments: the stack validates with it, the model gets its JSON Schema. */
  parameters: z.ZodType<Args>
  /** `read`, `idempotent` or `write` (default: never repeated unless the error proves nothing happened). */
  effect?: ToolEffect
  /** Forward `idempotencyKey` to an API that honours keys: a repeat of the call then lands once. */
  execute(args: Args, details: { signal: AbortSignal; idempotencyKey: string | undefined; attempt: number; runContext: unknown }): unknown
  /**
   * For a `write` whose outcome may be unknown (a timeout after it landed): whether an attempt with
   * these arguments took effect, as `defineTool`'s `reconcile` (a lookup at the same service).
   */
  reconcile?: ToolDefinition<z.ZodType<Args>>['reconcile']
}

/** What `shallotFunctionTools()` takes for each tool: a spec, or a tool made with `defineTool()` (its `input` schema). */
// biome-ignore lint/suspicious/noExplicitAny: each spec has its own argument type; the stack validates them
export type FunctionToolSource = ShallotFunctionToolSpec<any> | AnyTool

const SPEC_FIELDS = ['name', 'description', 'parameters', 'effect', 'execute', 'reconcile']
const DEFINITION_FIELDS = ['name', 'description', 'input', 'effect', 'execute', 'reconcile']

/** What to do instead of a field the SDK's `tool()` takes and a spec does not: the stack does that job. */
const INSTEAD: Readonly<Record<string, string>> = {
  needsApproval: 'ask for approval with policy() in the middleware',
  errorFunction: 'the stack renders every failure as the text the model reads (createStack({ renderError }))',
  strict: 'the stack validates the arguments with parameters',
  timeoutMs: 'give timeout() in the middleware',
  isEnabled: 'leave the tool out of the specs',
}

/** Refuses a field shallot would not use, naming it and what to do instead, rather than dropping it. */
function checkFields(spec: object, index: number): void {
  const name = typeof (spec as { name?: unknown }).name === 'string' ? `"${(spec as { name: string }).name}"` : `[${index}]`
  const isDefinition = 'input' in spec
  if (isDefinition && 'parameters' in spec)
    throw new TypeError(
      `shallotFunctionTools(): spec ${name} has both input and parameters: give one schema (parameters, or defineTool's input)`,
    )
  const known = isDefinition ? DEFINITION_FIELDS : SPEC_FIELDS
  for (const field of Object.keys(spec)) {
    if (known.includes(field)) continue
    const fix = INSTEAD[field] ?? `remove it; a spec takes ${SPEC_FIELDS.join(', ')} (a defineTool() tool: input instead of parameters)`
    throw new TypeError(`shallotFunctionTools(): spec ${name} has the unknown field "${field}": ${fix}`)
  }
}

/** The SDK's run context of the call being dispatched, for a spec's `execute` (core's execute context has no slot for it). */
export const agentsCall = new AsyncLocalStorage<unknown>()

/**
 * The tools as shallot tools. A spec's `execute` gets the SDK's run context of the call beside the call's signal,
 * idempotency key and attempt; a `defineTool()` tool runs as it is, with core's execute context.
 */
export function definitionsOf(specs: readonly FunctionToolSource[]): AnyTool[] {
  return specs.map((spec, index) => {
    if (typeof spec !== 'object' || spec === null)
      throw new TypeError(`shallotFunctionTools(): spec [${index}] must be an object { name, description, parameters, execute }`)
    checkFields(spec, index)
    if ('input' in spec) return defineTool(spec) as AnyTool
    return defineTool({
      name: spec.name,
      description: spec.description,
      input: spec.parameters as z.ZodType,
      effect: spec.effect ?? 'write',
      execute: (args, ctx) =>
        (spec.execute as ShallotFunctionToolSpec['execute'])(args, {
          signal: ctx.signal,
          idempotencyKey: ctx.idempotencyKey,
          attempt: ctx.attempt,
          runContext: agentsCall.getStore(),
        }),
      reconcile: spec.reconcile,
    }) as AnyTool
  })
}

/**
 * What the model gets of a tool's schema: a plain JSON copy (the SDK takes anything carrying a Standard Schema marker
 * for a schema to validate with), cleaned of invisible characters and capped by core's tool-text rules. Core's
 * dispatcher validates, so the model reads `invalid_arguments` from the stack, not the SDK's text.
 */
export function parametersOf(schema: z.ZodType): FunctionTool['parameters'] {
  const { $schema: _, ...json } = toolInputSchema(z.toJSONSchema(schema, { io: 'input' }))
  return { additionalProperties: true, ...json } as FunctionTool['parameters']
}

/** The SDK hands invoke the argument text; the policy's check reads values (text that is not JSON is left to the stack to refuse). */
export function jsonOr(input: string): unknown {
  try {
    return JSON.parse(input)
  } catch {
    return input
  }
}
