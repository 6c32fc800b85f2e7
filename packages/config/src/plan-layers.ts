import { closest, type MiddlewareDefinition, type ToolEffect } from '@shallot/core'
import type { ConfigIssue } from './config-error.js'
import { type ConfigDocument, entryParts, OFF, type SlotValue } from './config-schema.js'
import type { PathKey } from './config-source.js'
import { issuesFromZod, makeIssue } from './describe-issue.js'
import { jsonSchemaOf } from './describe-schema.js'

/** One set of options for one layer, checked by its middleware's schema. */
export interface LayerVariant {
  /** The options as written: the named policy looked up, a tool's override merged over the stack's options. */
  readonly raw: Readonly<Record<string, unknown>>
  /** The options after the middleware's schema (defaults filled in); what `create` receives. */
  readonly parsed: unknown
  /** Where the option at a path inside `raw` was written in the document. */
  readonly place: (path: readonly PathKey[]) => readonly PathKey[]
}

/** One layer of the stack, with the variants some tools get instead of the stack's own. */
export interface LayerPlan {
  readonly name: string
  readonly definition: MiddlewareDefinition
  /** Where the stack entry is: `['stack', 3]`. */
  readonly at: readonly PathKey[]
  readonly base: LayerVariant
  /** Per tool: other options, or `none` (the layer is skipped for that tool). */
  readonly tools: ReadonlyMap<string, LayerVariant | typeof OFF>
}

/** What planning found: the layers and effect overrides, or the issues that stop the config. */
export interface Plan {
  readonly layers: readonly LayerPlan[]
  readonly effects: ReadonlyMap<string, ToolEffect>
  readonly issues: readonly ConfigIssue[]
}

type LineOf = (path: readonly PathKey[]) => number | undefined

/**
 * Checks every layer's options with its middleware's own schema, after looking up named policies and
 * merging each tool's override over the stack entry's options, and collects every problem.
 */
export async function planLayers(
  document: ConfigDocument,
  registry: ReadonlyMap<string, MiddlewareDefinition>,
  lineOf: LineOf,
): Promise<Plan> {
  const issues: ConfigIssue[] = []
  const policyNames = Object.keys(document.policies)

  function lookup(ref: string, at: readonly PathKey[], inTools: boolean): Omit<LayerVariant, 'parsed'> | undefined {
    if (ref === OFF) {
      issues.push(
        makeIssue(at, lineOf, {
          message: `"${OFF}" turns a layer off for one tool, under tools:; to drop the layer from every call, remove it from stack`,
          received: ref,
          allowed: 'an object of options or the name of a policy',
        }),
      )
      return undefined
    }
    const policy = document.policies[ref]
    if (policy === undefined) {
      const guess = closest(ref, policyNames)
      const allowed =
        policyNames.length === 0 ? 'an object of options (no policies are defined)' : `one of the policies: ${policyNames.join(', ')}`
      issues.push(
        makeIssue(at, lineOf, {
          message: `unknown policy "${ref}"`,
          received: ref,
          allowed: inTools ? `${allowed}, or "${OFF}"` : allowed,
          hint:
            guess === undefined
              ? policyNames.length === 0
                ? 'define it under policies:'
                : `known policies: ${policyNames.join(', ')}`
              : `did you mean '${guess}'?`,
        }),
      )
      return undefined
    }
    return { raw: policy, place: (path) => ['policies', ref, ...path] }
  }

  async function check(definition: MiddlewareDefinition, variant: Omit<LayerVariant, 'parsed'>): Promise<LayerVariant | undefined> {
    let parsed: Awaited<ReturnType<typeof definition.options.safeParseAsync>>
    try {
      // defineMiddleware asks only for safeParse; a zod schema also parses async refinements.
      const schema = definition.options
      parsed = typeof schema.safeParseAsync === 'function' ? await schema.safeParseAsync(variant.raw) : schema.safeParse(variant.raw)
    } catch (err) {
      issues.push(makeIssue(variant.place([]), lineOf, { message: `the options schema of "${definition.name}" threw: ${String(err)}` }))
      return undefined
    }
    if (parsed.success) return { ...variant, parsed: parsed.data }
    const schema = jsonSchemaOf(definition.options)
    issues.push(...issuesFromZod(parsed.error, { input: variant.raw, schema, place: variant.place, lineOf }))
    return undefined
  }

  const layers: Array<LayerPlan & { readonly tools: Map<string, LayerVariant | typeof OFF> }> = []
  const positions = new Map<string, number>()
  for (const [index, entry] of document.stack.entries()) {
    const at: PathKey[] = ['stack', index]
    const { name, value } = entryParts(entry)
    const earlier = positions.get(name)
    if (earlier !== undefined) {
      issues.push(
        makeIssue(at, lineOf, {
          message: `"${name}" is already in the stack at stack[${earlier}]; a middleware appears once (per-tool options go under tools:)`,
          received: name,
        }),
      )
      continue
    }
    positions.set(name, index)
    const definition = registry.get(name)
    if (definition === undefined) continue // reported while loading packages
    const written = slot(value, [...at, name], lookup)
    if (written === undefined) continue
    const base = await check(definition, written)
    if (base === undefined) continue
    layers.push({ name, definition, at, base, tools: new Map() })
  }

  const effects = new Map<string, ToolEffect>()
  const inStack = [...positions.keys()]
  for (const [tool, overrides] of Object.entries(document.tools)) {
    for (const [name, value] of Object.entries(overrides)) {
      const at: PathKey[] = ['tools', tool, name]
      if (name === 'effect') {
        effects.set(tool, value as ToolEffect)
        continue
      }
      const layer = layers.find((l) => l.name === name)
      if (layer === undefined) {
        if (positions.has(name)) continue // its stack entry is invalid and already reported
        const known = registry.has(name)
        const guess = known ? undefined : closest(name, inStack)
        issues.push(
          makeIssue(at, lineOf, {
            message: known
              ? `the stack has no ${name} layer; add it to stack, or remove this override`
              : `"${name}" is not a layer of the stack`,
            received: name,
            allowed: `effect, or a layer of the stack: ${inStack.join(', ') || '(none)'}`,
            hint: guess === undefined ? undefined : `did you mean '${guess}'?`,
          }),
        )
        continue
      }
      if (value === OFF) {
        layer.tools.set(tool, OFF)
        continue
      }
      const written = override(layer.base, value as SlotValue, at, (ref, where) => lookup(ref, where, true))
      if (written === undefined) continue
      const variant = await check(layer.definition, written)
      if (variant !== undefined) layer.tools.set(tool, variant)
    }
  }
  return { layers, effects, issues }
}

type Lookup = (ref: string, at: readonly PathKey[], inTools: boolean) => Omit<LayerVariant, 'parsed'> | undefined

function slot(value: SlotValue, at: readonly PathKey[], lookup: Lookup): Omit<LayerVariant, 'parsed'> | undefined {
  if (typeof value === 'string') return lookup(value, at, false)
  return { raw: value ?? {}, place: (path) => [...at, ...path] }
}

/** A tool's options: a policy replaces the stack entry's options; an object is merged over them, key by key. */
function override(
  base: LayerVariant,
  value: SlotValue,
  at: readonly PathKey[],
  lookup: (ref: string, at: readonly PathKey[]) => Omit<LayerVariant, 'parsed'> | undefined,
): Omit<LayerVariant, 'parsed'> | undefined {
  if (typeof value === 'string') return lookup(value, at)
  const own = value ?? {}
  return {
    raw: { ...base.raw, ...own },
    place: (path) => (path.length > 0 && Object.hasOwn(own, path[0] as PathKey) ? [...at, ...path] : base.place(path)),
  }
}
