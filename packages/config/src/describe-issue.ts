import { closest } from '@shallot/core/kit'
import type { z } from 'zod'
import type { ConfigIssue } from './config-error.js'
import { formatPath, type PathKey } from './config-path.js'
import { describeSchema, type JsonSchema, schemaAt } from './describe-schema.js'

/** How to place issues found while validating one value of the document. */
export interface IssueContext {
  /** The value that was validated. */
  readonly input: unknown
  /** Its JSON Schema, to say what is allowed. */
  readonly schema: JsonSchema | undefined
  /** Maps a path inside `input` to the path in the document where that value was written. */
  readonly place: (path: readonly PathKey[]) => readonly PathKey[]
  readonly lineOf: (path: readonly PathKey[]) => number | undefined
}

/** A value as the message shows it: JSON, cut at 60 characters; `undefined` when missing. */
export function receivedText(value: unknown): string | undefined {
  if (value === undefined) return undefined
  let text: string
  try {
    text = typeof value === 'function' ? 'a function' : (JSON.stringify(value) ?? String(value))
  } catch {
    text = String(value)
  }
  if (typeof value === 'number' && !Number.isFinite(value)) text = String(value)
  return text.length > 60 ? `${text.slice(0, 60)}…` : text
}

/** Builds one issue at a document path; `message` is completed with the value received. */
export function makeIssue(
  path: readonly PathKey[],
  lineOf: (path: readonly PathKey[]) => number | undefined,
  parts: { message: string; received?: unknown; allowed?: string | undefined; hint?: string | undefined; missing?: boolean },
): ConfigIssue {
  const received = parts.missing ? undefined : receivedText(parts.received)
  return {
    path: formatPath(path),
    line: lineOf(path),
    message: parts.hint === undefined ? parts.message : `${parts.message}; ${parts.hint}`,
    received,
    allowed: parts.allowed,
    hint: parts.hint,
  }
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined
    value = (value as Record<PropertyKey, unknown>)[key]
  }
  return value
}

const DEFAULT_MESSAGE = /^(Invalid|Too (small|big)|Unrecognized key)/

function bound(issue: { minimum?: unknown; maximum?: unknown; inclusive?: boolean; origin?: string }, big: boolean): string {
  const limit = String(big ? issue.maximum : issue.minimum)
  const sign = big ? (issue.inclusive ? '≤' : '<') : issue.inclusive ? '≥' : '>'
  switch (issue.origin) {
    case 'array':
    case 'set':
      return `a list with ${big ? 'at most' : 'at least'} ${limit} item${limit === '1' ? '' : 's'}`
    case 'string':
      return `a string of ${big ? 'at most' : 'at least'} ${limit} character${limit === '1' ? '' : 's'}`
    default:
      return `a number ${sign} ${limit}`
  }
}

function article(expected: string): string {
  switch (expected) {
    case 'int':
      return 'a whole number'
    case 'array':
      return 'a list'
    case 'object':
    case 'record':
      return 'an object'
    case 'boolean':
      return 'true or false'
    case 'undefined':
      return 'nothing'
    default:
      return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`
  }
}

/**
 * Turns zod's issues for one value into config issues: the document path and line, the value
 * received, what is allowed in words, and the nearest known name for a misspelt key or value.
 */
export function issuesFromZod(error: z.ZodError, context: IssueContext): ConfigIssue[] {
  const out: ConfigIssue[] = []
  for (const issue of error.issues) {
    const path = issue.path as PathKey[]
    const where = context.place(path)
    const value = valueAt(context.input, path)
    const missing = value === undefined
    const described = describeSchema(schemaAt(context.schema, path))
    const custom = !DEFAULT_MESSAGE.test(issue.message)
    const got = missing ? 'nothing' : receivedText(value)
    switch (issue.code) {
      case 'unrecognized_keys': {
        const known = Object.keys(schemaAt(context.schema, path)?.properties ?? {})
        for (const key of issue.keys) {
          const guess = closest(key, known)
          out.push(
            makeIssue([...where, key], context.lineOf, {
              message: `unknown key "${key}"`,
              received: valueAt(value, [key]),
              allowed: known.length > 0 ? `one of ${known.join(', ')}` : 'no keys',
              hint: guess === undefined ? (known.length > 0 ? `known keys: ${known.join(', ')}` : undefined) : `did you mean '${guess}'?`,
            }),
          )
        }
        continue
      }
      case 'invalid_value': {
        const allowed = described ?? `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`
        const guess =
          typeof value === 'string'
            ? closest(
                value,
                issue.values.filter((v): v is string => typeof v === 'string'),
              )
            : undefined
        const message = custom ? `${issue.message} (got ${got})` : `expected ${allowed}, got ${got}`
        out.push(
          makeIssue(where, context.lineOf, {
            message,
            received: value,
            missing,
            allowed,
            hint: guess === undefined || custom ? undefined : `did you mean '${guess}'?`,
          }),
        )
        continue
      }
      case 'invalid_key': {
        const inner = issue.issues[0]?.message ?? issue.message
        out.push(
          makeIssue(where, context.lineOf, {
            message: `"${String(path[path.length - 1])}" is not allowed here: ${DEFAULT_MESSAGE.test(inner) ? 'not a valid name' : inner}`,
            received: path[path.length - 1],
            allowed: undefined,
          }),
        )
        continue
      }
      default: {
        let allowed: string | undefined
        if (custom) allowed = issue.message
        else if (issue.code === 'too_small') allowed = described ?? bound(issue, false)
        else if (issue.code === 'too_big') allowed = described ?? bound(issue, true)
        else if (issue.code === 'invalid_type') allowed = described ?? article(issue.expected)
        else allowed = described ?? issue.message
        const message = custom
          ? `${issue.message} (got ${got})`
          : missing
            ? `missing; expected ${allowed}`
            : `expected ${allowed}, got ${got}`
        out.push(makeIssue(where, context.lineOf, { message, received: value, missing, allowed }))
      }
    }
  }
  return out
}
