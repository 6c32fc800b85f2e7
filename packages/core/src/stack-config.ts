import { z } from 'zod'
import { ESCALATE_ALL, type EscalationPolicy } from './channel.js'
import { compose } from './compose.js'
import { defineTool } from './define-tool.js'
import { type LayerEntry, toolSideOf } from './layer.js'
import { OptionsError } from './options.js'
import { optionsParser } from './options-parser.js'
import type { ErrorRenderer } from './render.js'
import { splitOverrides } from './tool-overrides.js'
import type { AnyTool, Clock, Logger, Middleware } from './types.js'

export interface StackLimits {
  /** Largest accepted arguments, serialized. Default 256 KiB. */
  maxArgsBytes?: number
  /** Deepest accepted nesting of arguments. Default 32. */
  maxArgsDepth?: number
  /** Longest tool output the model reads; longer output is cut with a visible marker. Default 20,000 characters. */
  maxOutputChars?: number
}

export interface StackOptions {
  /** The layers, outermost first: layer objects (`retry()`) or middleware functions. Default: none (the bare dispatcher). */
  middleware?: LayerEntry<Middleware> | readonly LayerEntry<Middleware>[]
  tools: readonly AnyTool[] | Readonly<Record<string, AnyTool>>
  clock?: Clock
  random?: () => number
  /** A pino logger (or anything with the same methods). Default: silent. */
  logger?: Logger
  limits?: StackLimits
  /** Renders a soft error as the text the model reads. Default: compact JSON. */
  renderError?: ErrorRenderer
  /**
   * Your secrets, redacted from every text the model reads (error messages, hints, details, refusals,
   * panics, successful output), whichever layer wrote it: literal values (under 4 characters they are
   * ignored; also matched as JSON escapes them) or patterns. Secrets a layer declares (the error
   * classifier's `secrets`, redact's `hashKey`) are added to these.
   */
  secrets?: readonly (string | RegExp)[]
  /**
   * Also redact the built-in secret shapes (tokens, keys), addresses, paths and e-mail addresses from
   * successful output (`secrets` are redacted from it either way). Default false:
   * a false positive changes data the model reads (an e-mail it was asked to find, a 10.x address it
   * must configure), and it costs a pass per pattern over every output. Invisible characters are
   * stripped from successful output either way.
   */
  redactOutput?: boolean
  /**
   * Which soft-error categories end the run: `stack.dispatch` rejects with `LoopError('fatal')` /
   * `LoopError('user_input_required')` instead of resolving a soft result, for every caller (an
   * agent, the AI SDK and LangChain adapters, an MCP host, your own loop). Default: both do.
   */
  escalate?: { fatal?: boolean; user?: boolean }
}

const DEFAULT_LIMITS = { maxArgsBytes: 256 * 1024, maxArgsDepth: 32, maxOutputChars: 20_000 }

/** The options `createStack` checks with zod: an OptionsError names the option and the value it got. */
const stackOptionsSchema = z.object({
  limits: z
    .strictObject({
      maxArgsBytes: z.number().int().positive().default(DEFAULT_LIMITS.maxArgsBytes),
      maxArgsDepth: z.number().int().positive().max(1000).default(DEFAULT_LIMITS.maxArgsDepth),
      maxOutputChars: z.number().int().positive().default(DEFAULT_LIMITS.maxOutputChars),
    })
    .default(DEFAULT_LIMITS),
  escalate: z.strictObject({ fatal: z.boolean().default(true), user: z.boolean().default(true) }).default(ESCALATE_ALL),
})
const parseStackOptions = optionsParser('createStack()', stackOptionsSchema)

function toolList(tools: StackOptions['tools']): AnyTool[] {
  if (Array.isArray(tools)) return tools as AnyTool[]
  if (typeof tools === 'object' && tools !== null) return Object.values(tools)
  throw new OptionsError('createStack()', [{ path: 'tools', message: 'must be an array or a record of tools made with defineTool()' }])
}

export function checkSecrets(secrets: unknown): readonly (string | RegExp)[] {
  if (secrets === undefined) return []
  if (!Array.isArray(secrets))
    throw new OptionsError('createStack()', [
      { path: 'secrets', message: 'must be an array of strings or RegExps, e.g. [process.env.API_KEY]' },
    ])
  for (const [i, secret] of secrets.entries()) {
    if (typeof secret !== 'string' && !(secret instanceof RegExp)) {
      throw new OptionsError('createStack()', [
        { path: `secrets[${i}]`, message: `must be a string or a RegExp (got ${secret === null ? 'null' : typeof secret})` },
      ])
    }
  }
  return secrets
}

/** What `createStack` reads from its options once: the checked limits, the escalation policy, the tools by name. */
export interface StackConfig {
  readonly limits: Required<StackLimits>
  readonly policy: EscalationPolicy
  readonly argsLimits: { readonly maxBytes: number; readonly maxDepth: number }
  readonly tools: Map<string, AnyTool>
}

export function stackConfig(options: StackOptions): StackConfig {
  if (typeof options !== 'object' || options === null) throw new TypeError('createStack() takes an options object { middleware, tools }')
  // Neither given (most stacks): the defaults.
  const { limits, escalate } = parseStackOptions(
    options.limits === undefined && options.escalate === undefined ? undefined : { limits: options.limits, escalate: options.escalate },
  )
  const policy: EscalationPolicy = escalate.fatal && escalate.user ? ESCALATE_ALL : escalate
  const argsLimits = { maxBytes: limits.maxArgsBytes, maxDepth: limits.maxArgsDepth }
  const tools = new Map<string, AnyTool>()
  for (const raw of toolList(options.tools)) {
    const tool = defineTool(raw as AnyTool) as AnyTool
    if (tools.has(tool.name))
      throw new OptionsError('createStack()', [{ path: 'tools', message: `two tools are named "${tool.name}"; tool names must be unique` }])
    tools.set(tool.name, tool)
  }
  return { limits, policy, argsLimits, tools }
}

/** One set of layers: the composed onion, and the tool definitions it serves in place of the registered ones. */
export interface Layers {
  readonly onion: Middleware
  readonly tools: ReadonlyMap<string, AnyTool>
}

export function toLayers(middleware: StackOptions['middleware'], tools: ReadonlyMap<string, AnyTool>): Layers {
  const given: readonly unknown[] = middleware === undefined ? [] : Array.isArray(middleware) ? middleware : [middleware]
  const list = given.map((entry, i) => toolSideOf(entry, Array.isArray(middleware) ? `middleware[${i}]` : 'middleware'))
  const { layers, overrides } = splitOverrides(list, tools)
  return { onion: compose(layers), tools: overrides === undefined ? tools : new Map([...tools, ...overrides]) }
}
