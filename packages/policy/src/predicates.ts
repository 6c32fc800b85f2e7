import { posix } from 'node:path'
import { z } from 'zod'

/** Argument names a rule may not name: reading them would walk the prototype chain, not the call. */
const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype'])
const MAX_LIST = 1000
const MAX_PATTERN = 200
/** The longest string `matches` tests; a longer value cannot be decided (and is refused). */
export const MAX_MATCHED_LENGTH = 10_000

const argName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^.]+(\.[^.]+)*$/, 'must be an argument name, or a dotted path like "to.address"')
  .refine((name) => name.split('.').every((segment) => !FORBIDDEN_SEGMENTS.has(segment)), {
    message: 'must not name __proto__, constructor or prototype',
  })

const primitive = z.union([z.string().max(1000), z.number(), z.boolean(), z.null()])

/** Nested quantifiers (`(a+)+`) and backreferences make a regex's time grow without bound on some inputs. */
const NESTED_QUANTIFIER = /\((?:[^()\\]|\\.)*(?:[+*]|\{\d+,?\d*\})(?:[^()\\]|\\.)*\)(?:[+*?]|\{\d+,?\d*\})/
const BACKREFERENCE = /\\[1-9]|\\k</

const boundedPattern = z
  .string()
  .min(1)
  .max(MAX_PATTERN)
  .superRefine((pattern, issue) => {
    if (NESTED_QUANTIFIER.test(pattern) || BACKREFERENCE.test(pattern)) {
      issue.addIssue({
        code: 'custom',
        message: 'must not nest quantifiers like (a+)+ or use backreferences: they can take exponential time',
      })
      return
    }
    try {
      new RegExp(pattern, 'u')
    } catch (err) {
      issue.addIssue({ code: 'custom', message: `is not a valid regular expression: ${(err as Error).message}` })
    }
  })

const absolutePath = z
  .string()
  .min(1)
  .max(4096)
  .refine((root) => root.startsWith('/') && !root.includes('\0'), { message: 'must be an absolute path like /srv/data' })

const hostName = z
  .string()
  .min(1)
  .max(253)
  .refine((host) => normaliseHostEntry(host) !== undefined, { message: 'must be a host name like api.example.com or *.example.com' })

/**
 * One condition on one argument, as data: the operators a config file may use. Each names the
 * argument (`arg`, a dotted path for nested fields) and exactly one test; `not: true` inverts it.
 *
 * @example
 * argPredicateSchema.parse({ arg: 'amountCents', lte: 10_000 })
 */
export const argPredicateSchema = z
  .strictObject({
    arg: argName,
    lt: z.number().optional(),
    lte: z.number().optional(),
    gt: z.number().optional(),
    gte: z.number().optional(),
    in: z.array(primitive).min(1).max(MAX_LIST).optional(),
    under: absolutePath.optional(),
    hostIn: z.array(hostName).min(1).max(MAX_LIST).optional(),
    matches: boundedPattern.optional(),
    not: z.boolean().optional(),
  })
  .refine((p) => OPERATORS.filter((op) => p[op] !== undefined).length === 1, {
    message: 'give exactly one of lt, lte, gt, gte, in, under, hostIn, matches',
  })

export type ArgPredicate = z.output<typeof argPredicateSchema>

const OPERATORS = ['lt', 'lte', 'gt', 'gte', 'in', 'under', 'hostIn', 'matches'] as const

/** `true`/`false` when decided; `undefined` when the value cannot be checked (wrong type, NaN, not a URL), with why. */
export type Verdict = { readonly holds: boolean } | { readonly undecidable: string }

/** A predicate compiled once: the test and how it reads to a model. */
export interface CompiledPredicate {
  readonly arg: string
  test(args: unknown): Verdict
  readonly text: string
}

/** Reads `a.b.c` from own properties only, so `toString` or `constructor` never come from a prototype. */
export function readArg(args: unknown, path: readonly string[]): { found: true; value: unknown } | { found: false } {
  let value: unknown = args
  for (const segment of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, segment)) return { found: false }
    value = (value as Record<string, unknown>)[segment]
  }
  return { found: true, value }
}

/** A host entry as the URL parser spells it (lower case, punycode, no trailing dot); `*.` kept for subdomain entries. */
function normaliseHostEntry(entry: string): string | undefined {
  const wildcard = entry.startsWith('*.')
  const bare = wildcard ? entry.slice(2) : entry
  if (bare === '' || /[/:@?#\s]/.test(bare)) return undefined
  let host: string
  try {
    host = new URL(`http://${bare}`).hostname
  } catch {
    return undefined
  }
  host = host.replace(/\.$/, '')
  return wildcard ? `*.${host}` : host
}

/** Resolves `.` and `..` (and backslashes, which some tools treat as separators) before comparing with the root. */
function normalisePath(value: string): string | undefined {
  if (value.includes('\0')) return undefined
  const slashed = value.replace(/\\/g, '/')
  if (!slashed.startsWith('/')) return undefined
  return posix.normalize(slashed).replace(/(.)\/$/, '$1')
}

const finite = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value)

function numeric(op: 'lt' | 'lte' | 'gt' | 'gte', bound: number): (value: unknown) => Verdict {
  const compare = {
    lt: (v: number) => v < bound,
    lte: (v: number) => v <= bound,
    gt: (v: number) => v > bound,
    gte: (v: number) => v >= bound,
  }[op]
  return (value) => (finite(value) ? { holds: compare(value) } : { undecidable: 'is not a finite number' })
}

function under(root: string): (value: unknown) => Verdict {
  const normalRoot = normalisePath(root) as string
  const prefix = normalRoot === '/' ? '/' : `${normalRoot}/`
  return (value) => {
    if (typeof value !== 'string') return { undecidable: 'is not a path' }
    const path = normalisePath(value)
    if (path === undefined) return { undecidable: 'is not an absolute path' }
    return { holds: path === normalRoot || path.startsWith(prefix) }
  }
}

function hostIn(entries: readonly string[]): (value: unknown) => Verdict {
  const normal = entries.map((entry) => normaliseHostEntry(entry) as string)
  const exact = new Set(normal.filter((h) => !h.startsWith('*.')))
  const suffixes = normal.filter((h) => h.startsWith('*.')).map((h) => h.slice(1))
  return (value) => {
    if (typeof value !== 'string' || value.length > 8192) return { undecidable: 'is not a URL' }
    let host: string
    try {
      host = new URL(value).hostname.replace(/\.$/, '')
    } catch {
      return { undecidable: 'is not a URL' }
    }
    if (host === '') return { undecidable: 'is a URL without a host' }
    return { holds: exact.has(host) || suffixes.some((suffix) => host.endsWith(suffix)) }
  }
}

function oneOf(list: readonly (string | number | boolean | null)[]): (value: unknown) => Verdict {
  const set = new Set(list)
  return (value) => ({ holds: (value === null || typeof value !== 'object') && set.has(value as string) })
}

function matches(pattern: string): (value: unknown) => Verdict {
  const regex = new RegExp(`^(?:${pattern})$`, 'u')
  return (value) => {
    if (typeof value !== 'string') return { undecidable: 'is not a string' }
    if (value.length > MAX_MATCHED_LENGTH) return { undecidable: `is longer than ${MAX_MATCHED_LENGTH} characters` }
    return { holds: regex.test(value) }
  }
}

const list = (items: readonly unknown[]) =>
  items.length > 5 ? `${items.slice(0, 5).map(String).join(', ')}, …` : items.map(String).join(', ')

/**
 * Compiles a validated predicate into its test. A missing argument does not hold (an optional
 * field left out); a present one of the wrong kind is undecidable, and the policy denies the call.
 *
 * @example
 * compilePredicate({ arg: 'amountCents', lte: 10_000 }).test({ amountCents: 25_000 }) // { holds: false }
 */
export function compilePredicate(predicate: ArgPredicate): CompiledPredicate {
  const path = predicate.arg.split('.')
  const negate = predicate.not === true
  let check: (value: unknown) => Verdict
  let text: string
  if (predicate.lt !== undefined) [check, text] = [numeric('lt', predicate.lt), `${predicate.arg} < ${predicate.lt}`]
  else if (predicate.lte !== undefined) [check, text] = [numeric('lte', predicate.lte), `${predicate.arg} <= ${predicate.lte}`]
  else if (predicate.gt !== undefined) [check, text] = [numeric('gt', predicate.gt), `${predicate.arg} > ${predicate.gt}`]
  else if (predicate.gte !== undefined) [check, text] = [numeric('gte', predicate.gte), `${predicate.arg} >= ${predicate.gte}`]
  else if (predicate.in !== undefined) [check, text] = [oneOf(predicate.in), `${predicate.arg} one of ${list(predicate.in)}`]
  else if (predicate.under !== undefined) [check, text] = [under(predicate.under), `${predicate.arg} under ${predicate.under}`]
  else if (predicate.hostIn !== undefined) [check, text] = [hostIn(predicate.hostIn), `${predicate.arg} on host ${list(predicate.hostIn)}`]
  else [check, text] = [matches(predicate.matches as string), `${predicate.arg} matching /${predicate.matches}/`]
  return {
    arg: predicate.arg,
    text: negate ? `not ${text}` : text,
    test(args) {
      const read = readArg(args, path)
      if (!read.found) return { holds: negate }
      const verdict = check(read.value)
      return 'holds' in verdict && negate ? { holds: !verdict.holds } : verdict
    },
  }
}
