import type { MiddlewareDefinition } from '@shallot/core'
import { closest } from '@shallot/core/kit'
import type { ConfigIssue } from './config-error.js'
import { type ConfigDocument, OFF, type SlotValue } from './config-schema.js'
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

/** The document's line of a path, for the issues. */
export type LineOf = (path: readonly PathKey[]) => number | undefined

/** Parts of the document whose own problems are already reported: nothing that refers to them is reported again. */
export interface Broken {
  /** Indexes of stack entries that failed the structure check. */
  readonly entries: ReadonlySet<number>
  /** Indexes of `modelMiddleware` entries that failed the structure check. */
  readonly modelEntries?: ReadonlySet<number>
  /** Policies that failed the structure check. */
  readonly policies: ReadonlySet<string>
  /** True when `policies` itself is unusable, so any name may have been meant. */
  readonly allPolicies: boolean
  /** True when `stack` itself is unusable, so no override can be matched to a layer. */
  readonly stack: boolean
}

/** Options as written, before their middleware's schema read them. */
export type Written = Omit<LayerVariant, 'parsed'>
/** Options checked: the variant the layer gets, or the keys that were wrong. */
export type Checked =
  | { readonly variant: LayerVariant; readonly badKeys?: undefined }
  | { readonly variant?: undefined; readonly badKeys: Set<string> }

/** What every step of planning reads, and the issues they all add to. */
export interface Planning {
  readonly document: ConfigDocument
  readonly registry: ReadonlyMap<string, MiddlewareDefinition>
  readonly lineOf: LineOf
  readonly broken: Broken
  readonly issues: ConfigIssue[]
  readonly policies: ConfigDocument['policies']
  readonly policyNames: readonly string[]
}

/** Checks options no layer of the stack will use, by the definition they were meant for; each problem's hint says so. */
export async function readAs(p: Planning, definition: MiddlewareDefinition, written: Written, note: string): Promise<void> {
  const { issues } = p
  const before = issues.length
  await check(p, definition, written)
  for (const [i, issue] of issues.entries())
    if (i >= before) issues[i] = { ...issue, hint: issue.hint === undefined ? note : `${issue.hint} (${note})` }
}

/** The options of the policy `ref` names, or the issue that it names none (`inTools`: `none` would also do there). */
export function lookup(p: Planning, ref: string, at: readonly PathKey[], inTools: boolean): Written | undefined {
  const { issues, lineOf, policies, policyNames, broken } = p
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
  // Own properties only: "toString" or "__proto__" must never find something on Object.prototype.
  if (!Object.hasOwn(policies, ref)) {
    if (broken.allPolicies || broken.policies.has(ref)) return undefined
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
  return { raw: policies[ref] as Record<string, unknown>, place: (path) => ['policies', ref, ...path] }
}

/** Checks written options with the middleware's own schema; every problem becomes an issue at the place it was written. */
export async function check(p: Planning, definition: MiddlewareDefinition, written: Written): Promise<Checked> {
  const { issues, lineOf } = p
  let parsed: Awaited<ReturnType<typeof definition.options.safeParseAsync>>
  try {
    // defineMiddleware asks only for safeParse; a zod schema also parses async refinements.
    const schema = definition.options
    parsed = typeof schema.safeParseAsync === 'function' ? await schema.safeParseAsync(written.raw) : schema.safeParse(written.raw)
  } catch (err) {
    issues.push(makeIssue(written.place([]), lineOf, { message: `the options schema of "${definition.name}" threw: ${String(err)}` }))
    return { badKeys: new Set(Object.keys(written.raw)) }
  }
  if (parsed.success) return { variant: { ...written, parsed: parsed.data } }
  const schema = jsonSchemaOf(definition.options)
  issues.push(...issuesFromZod(parsed.error, { input: written.raw, schema, place: written.place, lineOf }))
  const badKeys = new Set<string>()
  for (const issue of parsed.error.issues) {
    const first = issue.path[0]
    if (first !== undefined) badKeys.add(String(first))
    else if (issue.code === 'unrecognized_keys') for (const key of issue.keys) badKeys.add(key)
  }
  return { badKeys }
}

/** `raw` without `keys`. */
export function without(raw: Readonly<Record<string, unknown>>, keys: ReadonlySet<string>): Record<string, unknown> {
  const kept: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(raw)) if (!keys.has(key)) kept[key] = value
  return kept
}

type Lookup = (ref: string, at: readonly PathKey[], inTools: boolean) => Written | undefined

/** A stack entry's options: the policy it names, or its object. */
export function slot(value: SlotValue, at: readonly PathKey[], lookup: Lookup): Written | undefined {
  if (typeof value === 'string') return lookup(value, at, false)
  return { raw: value ?? {}, place: (path) => [...at, ...path] }
}

/** A tool's options: a policy replaces the stack entry's options; an object is merged over them, key by key. */
export function override(
  base: Written,
  value: SlotValue,
  at: readonly PathKey[],
  lookup: (ref: string, at: readonly PathKey[]) => Written | undefined,
): Written | undefined {
  if (typeof value === 'string') return lookup(value, at)
  const own = value ?? {}
  return {
    raw: { ...base.raw, ...own },
    place: (path) => (path.length > 0 && Object.hasOwn(own, path[0] as PathKey) ? [...at, ...path] : base.place(path)),
  }
}
