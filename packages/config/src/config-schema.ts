import { TOOL_EFFECTS } from '@shallot/core'
import { z } from 'zod'

/**
 * A middleware's name in the file: a built-in (`retry`) or a package name (`@acme/shallot-rate-limit`).
 *
 * @example
 * MIDDLEWARE_NAME.test('@acme/shallot-rate-limit') // true
 */
export const MIDDLEWARE_NAME = /^(@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/
/**
 * The word that turns a layer off for one tool. It can never name a policy.
 *
 * @example
 * loadConfig({ stack: ['retry'], tools: { charge_card: { retry: OFF } } })
 */
export const OFF = 'none'
const POLICY_NAME = /^(?!none$)[A-Za-z][A-Za-z0-9_-]{0,63}$/
const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/
const EFFECTS = TOOL_EFFECTS

/** Where a middleware's options go: an object of options, the name of a policy, or nothing (the defaults). */
export type SlotValue = Record<string, unknown> | string | null

const describeValue = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value)
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

function checkStackEntry(entry: unknown, ctx: z.RefinementCtx): void {
  if (typeof entry === 'string') {
    if (!MIDDLEWARE_NAME.test(entry)) {
      ctx.addIssue({ code: 'custom', message: 'must be a middleware name like "retry" or "@acme/shallot-rate-limit"' })
    }
    return
  }
  if (!isObject(entry)) {
    ctx.addIssue({ code: 'custom', message: 'must be a middleware name like "retry", or one { name: options } pair' })
    return
  }
  const keys = Object.keys(entry)
  if (keys.length !== 1) {
    ctx.addIssue({
      code: 'custom',
      message:
        keys.length === 0
          ? 'names no middleware; write "retry" or { retry: { maxAttempts: 3 } }'
          : `names ${keys.length} middlewares (${keys.join(', ')}); give each its own entry in the list`,
    })
    return
  }
  const name = keys[0] as string
  if (!MIDDLEWARE_NAME.test(name)) {
    ctx.addIssue({
      code: 'custom',
      path: [name],
      message: 'is not a middleware name; use a name like "retry" or "@acme/shallot-rate-limit"',
    })
    return
  }
  const value = entry[name]
  if (value !== null && typeof value !== 'string' && !isObject(value)) {
    ctx.addIssue({
      code: 'custom',
      path: [name],
      message: `options must be an object, the name of a policy, or empty; not ${describeValue(value)}`,
    })
  }
}

const SERVER_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/

/** The model of `shallot run`: `provider:model-id`. Which providers exist is the command's to say. */
const modelSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]*:\S.*$/, 'must be provider:model-id, e.g. "openai:gpt-4o-mini" or "anthropic:claude-sonnet-4-5"')

/** An MCP server `shallot run` starts: one command line, or its command and arguments apart. */
const mcpServerSchema = z.union(
  [
    z.string().min(1),
    z.strictObject({
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      env: z.record(z.string(), z.string()).optional(),
      cwd: z.string().min(1).optional(),
    }),
  ],
  { error: () => 'must be a command line ("npx @modelcontextprotocol/server-filesystem .") or { command, args, env, cwd }' },
)

const slotValueSchema = z.union([z.record(z.string(), z.unknown()), z.string()], {
  error: (issue) =>
    `must be an object of options, the name of a policy, or "${OFF}" (this layer is skipped for this tool); not ${describeValue(issue.input)}`,
})

/**
 * The structure of a config document. Options are checked in a second step, by the schema of the
 * middleware they belong to, once the policies they name are looked up and installed packages are loaded.
 *
 * @example
 * configSchema.parse({ stack: ['panic-catcher', { retry: 'fast' }], policies: { fast: { baseMs: 100 } } })
 */
export const configSchema = z.strictObject({
  /** Where editors find {@link configJsonSchema}'s output, e.g. `./node_modules/@shallot/config/shallot.schema.json`. */
  $schema: z.string().optional(),
  /** The layers, outermost first: a name (`panic-catcher`), or one `{ name: options }` pair. */
  stack: z.array(z.unknown().superRefine(checkStackEntry)),
  /**
   * The model-call layers (`createAgent({ modelMiddleware })`), outermost first, written as `stack` is:
   * a name, or one `{ name: options }` pair. Each must have a model-call side (`createModel`).
   */
  modelMiddleware: z.array(z.unknown().superRefine(checkStackEntry)).optional(),
  /** Named option sets; a stack entry or tool override names one instead of giving options. */
  policies: z
    .record(
      z.string().regex(POLICY_NAME, `must be letters, digits, "_" and "-", starting with a letter ("${OFF}" is reserved)`),
      z.record(z.string(), z.unknown()),
    )
    .default({}),
  /** Per-tool settings: `effect`, and for any layer of the stack its own options, a policy name, or `none`. */
  tools: z
    .record(
      z.string().regex(TOOL_NAME, 'must be a tool name: letters, digits, "_", "-" and ".", starting with a letter'),
      z.object({ effect: z.enum(EFFECTS).optional() }).catchall(slotValueSchema),
    )
    .default({}),
  /** The model `shallot run` uses when no `--model` is given: `provider:model-id`. Stacks ignore it. */
  model: modelSchema.optional(),
  /** MCP servers `shallot run` starts and offers the tools of, by name. Stacks ignore them. */
  mcpServers: z
    .record(z.string().regex(SERVER_NAME, 'must be a server name: letters, digits, "_" and "-", starting with a letter'), mcpServerSchema)
    .optional(),
})

/** A config document that passed {@link configSchema}: stack entries are names or one-pair objects, options unchecked. */
export type ConfigDocument = z.output<typeof configSchema>

/** A config document as written. */
export type ConfigInput = z.input<typeof configSchema>

/**
 * The name and options of a stack entry that passed {@link configSchema}.
 *
 * @example
 * entryParts({ retry: 'fast' }) // { name: 'retry', value: 'fast' }
 */
export function entryParts(entry: unknown): { name: string; value: SlotValue } {
  if (typeof entry === 'string') return { name: entry, value: null }
  const [name, value] = Object.entries(entry as Record<string, SlotValue>)[0] as [string, SlotValue]
  return { name, value: value ?? null }
}

export { EFFECTS as TOOL_EFFECTS, mcpServerSchema, modelSchema, POLICY_NAME, SERVER_NAME, TOOL_NAME }
