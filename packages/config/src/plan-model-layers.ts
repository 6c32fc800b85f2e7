import type { MiddlewareDefinition } from '@shallot/core'
import type { ConfigIssue } from './config-error.js'
import { type ConfigDocument, entryParts, type SlotValue } from './config-schema.js'
import type { PathKey } from './config-source.js'
import { makeIssue } from './describe-issue.js'
import type { Written } from './plan-options.js'

/** A model layer's plan: plan-layers' `LayerPlan` with no per-tool variants. */
export interface ModelLayerPlan<Variant> {
  readonly name: string
  readonly definition: MiddlewareDefinition
  readonly at: readonly PathKey[]
  readonly base: Variant
  readonly tools: ReadonlyMap<string, never>
}

/** What {@link planModelLayers} borrows from the stack's planning: one lookup of policies and one check of options. */
export interface ModelPlanning<Variant> {
  readonly lineOf: (path: readonly PathKey[]) => number | undefined
  /** Indexes of `modelMiddleware` entries whose structure is already reported. */
  readonly broken: ReadonlySet<number>
  /** Where problems go. */
  readonly issues: ConfigIssue[]
  /** An entry's options as written: the policy it names looked up (reporting an unknown one), or its object. */
  options(value: SlotValue, at: readonly PathKey[]): Written | undefined
  /** The options checked by the definition's schema; `undefined` when they are wrong (already reported). */
  check(definition: MiddlewareDefinition, written: Written): Promise<Variant | undefined>
}

/** A definition made by an older core has no `handles`: hosts read it as wrapping tool calls only. */
const wrapsModels = (definition: MiddlewareDefinition) => (definition as Partial<MiddlewareDefinition>).handles?.models === true

/**
 * The layers of `modelMiddleware:`, outermost first: each named once, with a model-call side
 * (`createModel`), its options (an object, a policy, or the defaults) checked by its own schema. A
 * layer that wraps tool calls only is a problem naming it and the fix.
 */
export async function planModelLayers<Variant>(
  document: ConfigDocument,
  registry: ReadonlyMap<string, MiddlewareDefinition>,
  planning: ModelPlanning<Variant>,
): Promise<Array<ModelLayerPlan<Variant>>> {
  const { lineOf, issues } = planning
  const layers: Array<ModelLayerPlan<Variant>> = []
  const positions = new Map<string, number>()
  for (const [index, entry] of (document.modelMiddleware ?? []).entries()) {
    if (planning.broken.has(index)) continue
    const at: PathKey[] = ['modelMiddleware', index]
    const { name, value } = entryParts(entry)
    const earlier = positions.get(name)
    if (earlier !== undefined) {
      issues.push(
        makeIssue(at, lineOf, {
          message: `"${name}" is already in modelMiddleware at modelMiddleware[${earlier}]; a middleware appears once`,
          received: name,
        }),
      )
      continue
    }
    positions.set(name, index)
    const definition = registry.get(name)
    if (definition === undefined) continue // reported while loading packages
    if (!wrapsModels(definition)) {
      issues.push(
        makeIssue(at, lineOf, {
          message: `"${name}" wraps tool calls only: its definition has no createModel, so it cannot wrap model calls`,
          received: name,
          hint: `list it under stack: instead, or give its defineMiddleware({ … }) a createModel (see docs/writing-middleware.md)`,
        }),
      )
      continue
    }
    const written = planning.options(value, [...at, name])
    if (written === undefined) continue
    const base = await planning.check(definition, written)
    if (base !== undefined) layers.push({ name, definition, at, base, tools: new Map<string, never>() })
  }
  return layers
}
