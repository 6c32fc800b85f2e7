import type { MiddlewareDefinition } from '@shallot/core'
import { closest } from '@shallot/core/kit'
import type { ConfigDocument } from './config-schema.js'
import { jsonSchemaOf } from './describe-schema.js'

/** An unused policy and the middleware it is read as: the first of those whose options share most keys with it. */
export interface UnusedPolicy {
  readonly name: string
  readonly raw: Readonly<Record<string, unknown>>
  readonly definition: MiddlewareDefinition
}

/**
 * The policies that no stack entry or tool override names and that no known middleware accepts, each with the
 * middleware it most looks like, so its mistakes can be reported against that middleware's schema. A policy that
 * shares no key with any known middleware is left alone: it may be meant for a package this config does not load.
 *
 * @example
 * await unusedPolicies({ stack: [], policies: { slow: { backof: 'full', maxAttempts: -1 } }, tools: {} }, registry)
 * // [{ name: 'slow', raw: { backof: 'full', maxAttempts: -1 }, definition: <retry> }]
 */
export async function unusedPolicies(
  document: ConfigDocument,
  registry: ReadonlyMap<string, MiddlewareDefinition>,
  brokenPolicies: ReadonlySet<string>,
): Promise<UnusedPolicy[]> {
  const named = namedPolicies(document)
  const found: UnusedPolicy[] = []
  for (const [name, raw] of Object.entries(document.policies)) {
    if (named.has(name) || brokenPolicies.has(name)) continue
    const nearest = nearestDefinitions(raw, registry.values())
    if (nearest[0] === undefined || (await acceptedByAny(raw, nearest))) continue
    found.push({ name, raw, definition: nearest[0] })
  }
  return found
}

/** Every policy name a stack entry or a tool override refers to, whether or not the rest of it is valid. */
function namedPolicies(document: ConfigDocument): Set<string> {
  const named = new Set<string>()
  for (const entry of [...(document.stack as unknown[]), ...((document.modelMiddleware ?? []) as unknown[])]) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) continue
    for (const value of Object.values(entry)) if (typeof value === 'string') named.add(value)
  }
  for (const overrides of Object.values(document.tools)) {
    for (const [key, value] of Object.entries(overrides)) if (key !== 'effect' && typeof value === 'string') named.add(value)
  }
  return named
}

/**
 * The middlewares whose options name most of the policy's keys, in stack order; none if no key matches. A key
 * written exactly counts 1, a near miss of an option (`maxAtempts`) counts ½, so a policy whose only key is a typo
 * is still read. Only these judge it: a layer that ignores unknown keys would accept any policy, typos included.
 */
function nearestDefinitions(raw: Readonly<Record<string, unknown>>, definitions: Iterable<MiddlewareDefinition>): MiddlewareDefinition[] {
  const keys = Object.keys(raw)
  let best: MiddlewareDefinition[] = []
  let bestScore = 0
  for (const definition of definitions) {
    const known = Object.keys(jsonSchemaOf(definition.options).properties ?? {})
    let score = 0
    for (const key of keys) score += known.includes(key) ? 1 : closest(key, known) === undefined ? 0 : 0.5
    if (score > bestScore) [best, bestScore] = [[definition], score]
    else if (score === bestScore && score > 0) best.push(definition)
  }
  return best
}

async function acceptedByAny(raw: Readonly<Record<string, unknown>>, definitions: readonly MiddlewareDefinition[]): Promise<boolean> {
  for (const definition of definitions) if (await accepts(definition, raw)) return true
  return false
}

async function accepts(definition: MiddlewareDefinition, raw: Readonly<Record<string, unknown>>): Promise<boolean> {
  try {
    const schema = definition.options
    const parsed = typeof schema.safeParseAsync === 'function' ? await schema.safeParseAsync(raw) : schema.safeParse(raw)
    return parsed.success
  } catch {
    return false
  }
}
