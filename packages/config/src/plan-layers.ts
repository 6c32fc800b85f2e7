import type { MiddlewareDefinition, ToolEffect } from '@shallot/core'
import { closest } from '@shallot/core/kit'
import type { ConfigIssue } from './config-error.js'
import { type ConfigDocument, entryParts, OFF, type SlotValue } from './config-schema.js'
import type { PathKey } from './config-source.js'
import { makeIssue } from './describe-issue.js'
import { planModelLayers } from './plan-model-layers.js'
import {
  type Broken,
  check,
  type LayerVariant,
  type LineOf,
  lookup,
  override,
  type Planning,
  readAs,
  slot,
  without,
} from './plan-options.js'
import { unusedPolicies } from './unused-policies.js'

export type { Broken, LayerVariant } from './plan-options.js'

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
  /** The model-call layers (`modelMiddleware:`), outermost first; they take no per-tool overrides. */
  readonly modelLayers: readonly LayerPlan[]
  readonly effects: ReadonlyMap<string, ToolEffect>
  readonly issues: readonly ConfigIssue[]
}

const NOTHING_BROKEN: Broken = { entries: new Set(), policies: new Set(), allPolicies: false, stack: false }

/** A stack entry's layer, valid or not: overrides are checked against its definition either way. */
interface Candidate {
  readonly definition: MiddlewareDefinition
  /** The stack entry's options, without the keys that are wrong (their problems are already reported). */
  readonly raw: Readonly<Record<string, unknown>>
  readonly place: LayerVariant['place']
  readonly layer: (LayerPlan & { readonly tools: Map<string, LayerVariant | typeof OFF> }) | undefined
}

/**
 * Checks every layer's options with its middleware's own schema, after looking up named policies and
 * merging each tool's override over the stack entry's options, and collects every problem. A stack
 * entry that is wrong does not hide the problems of its overrides: they are checked over the entry's
 * valid options.
 */
export async function planLayers(
  document: ConfigDocument,
  registry: ReadonlyMap<string, MiddlewareDefinition>,
  lineOf: LineOf,
  broken: Broken = NOTHING_BROKEN,
): Promise<Plan> {
  const issues: ConfigIssue[] = []
  const p: Planning = {
    document,
    registry,
    lineOf,
    broken,
    issues,
    policies: document.policies,
    policyNames: Object.keys(document.policies),
  }
  const { layers, candidates, positions } = await planStack(p)
  const effects = await planOverrides(p, candidates, positions)
  const modelLayers = await planModelLayers(document, registry, {
    lineOf,
    broken: broken.modelEntries ?? new Set(),
    issues,
    options: (value, at) => slot(value, at, (ref, where, inTools) => lookup(p, ref, where, inTools)),
    check: async (definition, written) => (await check(p, definition, written)).variant,
  })
  await checkUnusedPolicies(p)
  return { layers, modelLayers, effects, issues: unique(issues) }
}

/** The stack's entries, each checked by its middleware: the layers, and a candidate per name for the tools' overrides. */
async function planStack(p: Planning) {
  const { document, registry, broken, issues, lineOf } = p
  const layers: Array<NonNullable<Candidate['layer']>> = []
  const candidates = new Map<string, Candidate>()
  const positions = new Map<string, number>()
  for (const [index, entry] of document.stack.entries()) {
    const at: PathKey[] = ['stack', index]
    if (broken.entries.has(index)) {
      const name = brokenName(entry)
      if (name === undefined || positions.has(name)) continue
      positions.set(name, index)
      // The entry's own options are unusable, but its overrides can still be checked by its middleware.
      const definition = registry.get(name)
      if (definition !== undefined) candidates.set(name, { definition, raw: {}, place: (path) => [...at, name, ...path], layer: undefined })
      continue
    }
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
    if (definition === undefined) {
      // Reported while loading packages; a misspelt built-in's options are still read, as the layer it likely means.
      await readAsMeant(p, name, value, at)
      continue
    }
    const written = slot(value, [...at, name], (ref, where, inTools) => lookup(p, ref, where, inTools))
    if (written === undefined) {
      candidates.set(name, { definition, raw: {}, place: (path) => [...at, name, ...path], layer: undefined })
      continue
    }
    const checked = await check(p, definition, written)
    if (checked.variant === undefined) {
      candidates.set(name, { definition, raw: without(written.raw, checked.badKeys), place: written.place, layer: undefined })
      continue
    }
    const layer = { name, definition, at, base: checked.variant, tools: new Map<string, LayerVariant | typeof OFF>() }
    layers.push(layer)
    candidates.set(name, { definition, raw: checked.variant.raw, place: checked.variant.place, layer })
  }
  return { layers, candidates, positions }
}

/** The tools' overrides: each merged over its layer's options and checked, or `none`; and the tools' effects. */
async function planOverrides(p: Planning, candidates: ReadonlyMap<string, Candidate>, positions: ReadonlyMap<string, number>) {
  const { document, registry, broken, issues, lineOf } = p
  const effects = new Map<string, ToolEffect>()
  const inStack = [...positions.keys()]
  for (const [tool, overrides] of Object.entries(document.tools)) {
    for (const [name, value] of Object.entries(overrides)) {
      const at: PathKey[] = ['tools', tool, name]
      if (name === 'effect') {
        effects.set(tool, value as ToolEffect)
        continue
      }
      if (broken.stack) continue // no layer can be matched; the stack's problem is reported
      const candidate = candidates.get(name)
      if (candidate === undefined) {
        if (positions.has(name)) {
          // Its stack entry is wrong, or its package did not load: a policy it names can still be checked.
          if (typeof value === 'string' && value !== OFF) lookup(p, value, at, true)
          continue
        }
        const known = registry.get(name)
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
        // The override's options are still read, as the layer it names reads them: a missing layer does not hide them.
        if (known !== undefined && value !== OFF) {
          const written = override({ raw: {}, place: (path) => [...at, ...path] }, value as SlotValue, at, (ref, where) =>
            lookup(p, ref, where, true),
          )
          if (written !== undefined) await readAs(p, known, written, `the stack has no ${name} layer; read as ${name} options`)
        }
        continue
      }
      if (value === OFF) {
        candidate.layer?.tools.set(tool, OFF)
        continue
      }
      const written = override(candidate, value as SlotValue, at, (ref, where) => lookup(p, ref, where, true))
      if (written === undefined) continue
      const checked = await check(p, candidate.definition, written)
      if (checked.variant !== undefined) candidate.layer?.tools.set(tool, checked.variant)
    }
  }
  return effects
}

/**
 * A policy no layer names is still read, as the options of the middleware it most looks like: a typo in a
 * policy kept for later must not wait for the day someone names it.
 */
async function checkUnusedPolicies(p: Planning): Promise<void> {
  const { document, registry, broken } = p
  for (const policy of await unusedPolicies(document, registry, broken.policies)) {
    const written = { raw: policy.raw, place: (path: readonly PathKey[]) => ['policies', policy.name, ...path] }
    await readAs(p, policy.definition, written, `no layer names this policy yet; read as ${policy.definition.name} options`)
  }
}

/**
 * A stack entry whose name is no middleware but close to one (`retyr`): its options (an object, or the
 * policy it names) are read as that middleware's, so their mistakes are reported with the name's.
 */
async function readAsMeant(p: Planning, name: string, value: SlotValue, at: readonly PathKey[]): Promise<void> {
  const meant = closest(name, [...p.registry.keys()])
  const definition = meant === undefined ? undefined : p.registry.get(meant)
  if (definition === undefined) return
  // A policy it names that does not exist is already said by the name's problem: nothing more to read.
  if (typeof value === 'string' && !Object.hasOwn(p.policies, value)) return
  const written = slot(value, [...at, name], (ref, where, inTools) => lookup(p, ref, where, inTools))
  if (written !== undefined)
    await readAs(p, definition, written, `read as ${definition.name} options: "${name}" is likely ${definition.name} misspelt`)
}

/** The middleware name of a stack entry that failed the structure check, when it has one. */
function brokenName(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return undefined
  const keys = Object.keys(entry)
  return keys.length === 1 ? keys[0] : undefined
}

/** One issue per place and message: a policy named by several layers is wrong once. */
function unique(issues: readonly ConfigIssue[]): ConfigIssue[] {
  const seen = new Set<string>()
  return issues.filter((issue) => {
    const key = `${issue.path}\u0000${issue.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}
