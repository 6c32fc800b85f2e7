import type { MiddlewareDefinition } from '@shallot/core'
import { z } from 'zod'
import { builtinMiddleware } from './builtins.js'
import {
  configSchema,
  MIDDLEWARE_NAME,
  mcpServerSchema,
  modelSchema,
  OFF,
  POLICY_NAME,
  SERVER_NAME,
  TOOL_EFFECTS,
  TOOL_NAME,
} from './config-schema.js'

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * The zod schema an editor checks a config file against: {@link configSchema}'s structure, with each
 * given middleware's own options schema in its place, so editors complete and check options too.
 *
 * @example
 * editorSchema(builtinMiddleware).safeParse(document).success
 */
export function editorSchema(definitions: readonly MiddlewareDefinition[]) {
  const names = definitions.map((d) => d.name)
  const policyRef = z.string().regex(POLICY_NAME).describe('the name of a policy under policies:')
  const off = z.literal(OFF).describe('skip this layer for this tool')
  const anyOptions = z.record(z.string(), z.unknown())
  const packageName =
    names.length === 0
      ? z.string().regex(MIDDLEWARE_NAME)
      : z.string().regex(new RegExp(`^(?!(?:${names.map(escapeRegExp).join('|')})$)${MIDDLEWARE_NAME.source.slice(1)}`))
  const builtinEntries = definitions.map((d) =>
    z.strictObject({ [d.name]: z.union([d.options, policyRef, z.null()]) }).describe(d.description || d.name),
  )
  const entry = z.union([
    ...(names.length === 0 ? [] : [z.enum(names as [string, ...string[]]).describe('a built-in middleware, default options')]),
    packageName.describe('an installed package that exports a middleware definition, default options'),
    ...builtinEntries,
    z
      .record(packageName, z.union([anyOptions, policyRef, z.null()]))
      .meta({ minProperties: 1, maxProperties: 1, description: 'an installed package and its options' }),
  ])
  // The model stack offers the definitions with a model-call side (createModel), and any installed package. Their
  // options are checked by loadConfig, not repeated here: the tool stack's entries already carry every schema once.
  const forModels = definitions.filter((d) => (d as Partial<MiddlewareDefinition>).handles?.models === true).map((d) => d.name)
  const oneLayer = { minProperties: 1, maxProperties: 1 }
  const modelEntry = z.union([
    ...(forModels.length === 0
      ? []
      : [
          z.enum(forModels as [string, ...string[]]).describe('a built-in model middleware, default options'),
          z
            .partialRecord(z.enum(forModels as [string, ...string[]]), z.union([anyOptions, policyRef, z.null()]))
            .meta({ ...oneLayer, description: 'a built-in model middleware and its options' }),
        ]),
    packageName.describe('an installed package whose middleware definition has createModel, default options'),
    z
      .record(packageName, z.union([anyOptions, policyRef, z.null()]))
      .meta({ ...oneLayer, description: 'an installed package and its options' }),
  ])
  const overrides = z
    .object({
      effect: z.enum(TOOL_EFFECTS).optional().describe('overrides the tool definition: read, idempotent or write'),
      ...Object.fromEntries(definitions.map((d) => [d.name, z.union([d.options, policyRef, off]).optional()])),
    })
    .catchall(z.union([anyOptions, policyRef, off]))
  const shape = configSchema.shape
  return z
    .strictObject({
      $schema: shape.$schema.describe('where editors find this schema'),
      stack: z.array(entry).describe('the layers, outermost first: a name, or one { name: options } pair'),
      modelMiddleware: z
        .array(modelEntry)
        .optional()
        .describe('the model-call layers (createAgent({ modelMiddleware })), outermost first, written as stack is'),
      policies: z
        .record(z.string().regex(POLICY_NAME), anyOptions)
        .optional()
        .describe('named option sets; a stack entry or tool override names one instead of giving options'),
      tools: z
        .record(z.string().regex(TOOL_NAME), overrides)
        .optional()
        .describe('per tool: effect, and for any layer of the stack its own options, a policy name, or none'),
      model: modelSchema.optional().describe('the model of shallot run when no --model is given: provider:model-id'),
      mcpServers: z
        .record(z.string().regex(SERVER_NAME), mcpServerSchema)
        .optional()
        .describe('MCP servers shallot run starts, by name: a command line, or { command, args, env, cwd }'),
    })
    .meta({ title: 'shallot config', description: 'The middleware stack of a shallot agent: layers, named policies, per-tool overrides.' })
}

/**
 * The JSON Schema (draft-07, for the widest editor support) of a config file naming the built-in
 * middlewares; `shallot.schema.json` is this, written by `pnpm run schema`.
 *
 * @example
 * writeFileSync('shallot.schema.json', JSON.stringify(configJsonSchema(), null, 2))
 */
export function configJsonSchema(definitions: readonly MiddlewareDefinition[] = builtinMiddleware): Record<string, unknown> {
  return z.toJSONSchema(editorSchema(definitions), { target: 'draft-07', io: 'input', unrepresentable: 'any' }) as Record<string, unknown>
}

/**
 * {@link configJsonSchema} as the text of `shallot.schema.json`.
 *
 * @example
 * writeFileSync('shallot.schema.json', configJsonSchemaText())
 */
export function configJsonSchemaText(definitions?: readonly MiddlewareDefinition[]): string {
  return `${JSON.stringify(configJsonSchema(definitions), null, 2)}\n`
}
