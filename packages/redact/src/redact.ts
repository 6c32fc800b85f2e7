import { randomBytes } from 'node:crypto'
import { type Middleware, type Next, parseOptions, type ToolContext, ToolError, type ToolErrorOptions } from '@shallot/core'
import { z } from 'zod'
import { blockedByPolicy } from './blocked.js'
import { BUILTIN_DETECTORS, DETECTORS } from './detectors.js'
import { Findings, type Rule, type Strategy, textScanner } from './scan.js'
import { backtrackingProblem, userDetector } from './user-patterns.js'
import { Unreadable, walkValue } from './walk.js'

const strategySchema = z.enum(['redact', 'mask', 'hash', 'block'])
const detectorName = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'must be a snake_case name, like employee_id')
const toolName = z.string().regex(/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/, 'must be a tool name')

/** The options a config file can hold too: everything but RegExp patterns. */
export const redactDataShape = {
  /** Which built-in detectors run. Default: all of them. */
  detectors: z.array(z.enum(BUILTIN_DETECTORS)).default([...BUILTIN_DETECTORS]),
  /** What happens to a value found: `redact` (default), `mask`, `hash` or `block`. */
  strategy: strategySchema.default('redact'),
  /** A strategy per detector (built-in or pattern name), over `strategy`. */
  strategies: z.record(detectorName, strategySchema).default({}),
  /** The key of `hash`: the same value hashes alike under one key. Default: a random key per layer. */
  hashKey: z.string().min(16, 'must be at least 16 characters: it keys the hashes').optional(),
  /** Put the tool's raw value on `redact.applied` and `redact.blocked` as `raw`, for listeners. Default false. */
  rawInEvents: z.boolean().default(false),
  /** Only these tools. Default: every tool. */
  tools: z.array(toolName).min(1).optional(),
  /** Nesting past this depth is replaced, unread, by `[redacted: nested too deep]`. Default 64. */
  maxNesting: z.number().int().min(1).max(1000).default(64),
  /** Most characters (strings and keys) read from one result; a larger result is withheld. Default 10,000,000. */
  maxChars: z.number().int().min(1).max(1_000_000_000).default(10_000_000),
}

const patternOf = <P extends z.ZodType>(pattern: P) => z.strictObject({ name: detectorName, pattern, strategy: strategySchema.optional() })

type Checked = {
  detectors: readonly string[]
  strategies: Record<string, unknown>
  patterns: ReadonlyArray<{ name: string; pattern: RegExp | string }>
}

/** Pattern names are new and unique, RegExps cannot backtrack catastrophically, `strategies` names detectors in use. */
function checkRules(o: Checked, issues: z.RefinementCtx): void {
  const names = new Set<string>(o.detectors)
  o.patterns.forEach(({ name, pattern }, i) => {
    if ((BUILTIN_DETECTORS as readonly string[]).includes(name) || names.has(name)) {
      issues.addIssue({ code: 'custom', path: ['patterns', i, 'name'], message: `'${name}' is already a detector's name; pick another` })
    }
    names.add(name)
    const problem = pattern instanceof RegExp ? backtrackingProblem(pattern.source) : undefined
    if (problem !== undefined) {
      issues.addIssue({ code: 'custom', path: ['patterns', i, 'pattern'], message: `${problem}; rewrite it without nested repetition` })
    }
  })
  for (const name of Object.keys(o.strategies)) {
    if (!names.has(name)) {
      issues.addIssue({ code: 'custom', path: ['strategies', name], message: `names no detector in use; known: ${[...names].join(', ')}` })
    }
  }
}

/** User patterns as a config file writes them: a string is matched literally (at least 4 characters). */
export const redactFilePatternsSchema = z
  .array(patternOf(z.string().min(4)))
  .max(100)
  .default([])

/**
 * Options of {@link redact}.
 *
 * @example
 * redactOptionsSchema.parse({ strategies: { card: 'mask' }, patterns: [{ name: 'employee_id', pattern: /\bEMP-\d{6}\b/ }] })
 */
export const redactOptionsSchema = z
  .strictObject({
    ...redactDataShape,
    /** Your own detectors: a RegExp (refused if it nests repetition), or a string matched literally. */
    patterns: z
      .array(
        patternOf(z.union([z.instanceof(RegExp), z.string().min(4)], { error: 'must be a RegExp or a string of 4 characters or more' })),
      )
      .max(100)
      .default([]),
  })
  .superRefine(checkRules)

/** What {@link redact} accepts. */
export type RedactOptions = z.input<typeof redactOptionsSchema>
/** A strategy: `redact`, `mask`, `hash` or `block`. */
export type RedactStrategy = Strategy

/** The ToolError's text rewritten by `scan`, or the same error when nothing was found (or it is no ToolError). */
function cleanError(err: unknown, scan: (text: string, findings: Findings) => string, findings: Findings): unknown {
  if (!ToolError.is(err)) return err
  const message = scan(err.message, findings)
  const hint = err.hint === undefined ? undefined : scan(err.hint, findings)
  if (findings.empty) return err
  const options: ToolErrorOptions = { category: err.category, retryable: err.retryable, safeToRepeat: err.safeToRepeat, cause: err }
  if (hint !== undefined) options.hint = hint
  if (err.retryAfterMs !== undefined) options.retryAfterMs = err.retryAfterMs
  return new ToolError(err.code, message, options)
}

/**
 * Rewrites what a tool answers before the model reads it: e-mail addresses, card numbers (Luhn),
 * IBANs (mod-97), IPv4 and IPv6 addresses, API keys (OpenAI, Anthropic, Stripe, GitHub, Slack, AWS,
 * Google, GitLab, npm, Hugging Face), core's secret patterns, and your own patterns, in every string
 * and key of the result, however nested. Each found value is redacted, masked, hashed (keyed,
 * stable) or, with `block`, the whole result is withheld as a soft `blocked_by_policy` that names
 * the detector, never the value. A soft error's message and hint are redacted too. Opt-in: put it
 * just inside panic-catcher, so every answer (a fallback, a replay) passes it.
 *
 * @example
 * const stack = createStack({ tools, middleware: [panicCatcher(), redact({ strategies: { card: 'mask', api_key: 'block' } }), retry()] })
 */
export function redact(options?: RedactOptions): Middleware {
  const o = parseOptions('redact()', redactOptionsSchema, options)
  const strategyOf = (name: string, own?: Strategy): Strategy => (o.strategies[name] as Strategy | undefined) ?? own ?? o.strategy
  const rules: Rule[] = []
  for (const name of BUILTIN_DETECTORS) {
    if (name === 'secret' || !o.detectors.includes(name)) continue
    for (const detector of DETECTORS[name]) rules.push({ detector, strategy: strategyOf(name) })
  }
  for (const p of o.patterns) rules.push({ detector: userDetector(p.name, p.pattern), strategy: strategyOf(p.name, p.strategy), own: true })
  const secret = o.detectors.includes('secret') ? strategyOf('secret') : undefined
  const scan = textScanner(rules, secret, o.hashKey ?? randomBytes(32).toString('hex'))
  const tools = o.tools === undefined ? undefined : new Set(o.tools)
  const limits = { maxNesting: o.maxNesting, maxChars: o.maxChars }

  function withhold(ctx: ToolContext, detectors: string[], raw: unknown): ToolError {
    ctx.emit('redact.blocked', o.rawInEvents ? { detectors, raw } : { detectors })
    return blockedByPolicy(ctx, detectors)
  }

  const layer: Middleware = async function redact(ctx: ToolContext, next: Next): Promise<void> {
    if (tools !== undefined && !tools.has(ctx.call.name)) return next()
    try {
      await next()
    } catch (err) {
      const findings = new Findings()
      const clean = cleanError(err, scan, findings)
      if (clean !== err) ctx.emit('redact.applied', { found: Object.fromEntries(findings.counts), in: 'error' })
      throw clean
    }
    const output = ctx.result
    if (output === undefined) return
    let findings = new Findings()
    let value: unknown
    try {
      // A first look builds nothing: a result with nothing to find goes on as it is, its types and identity kept.
      walkValue(output.value, scan, findings, limits, false)
      if (findings.empty) return
      findings = new Findings()
      value = walkValue(output.value, scan, findings, limits)
    } catch (err) {
      throw withhold(ctx, [err instanceof Unreadable ? err.why : 'unreadable'], output.value)
    }
    if (findings.blocking.size > 0) throw withhold(ctx, [...findings.blocking], output.value)
    const found = Object.fromEntries(findings.counts)
    ctx.emit('redact.applied', o.rawInEvents ? { found, in: 'result', raw: output.value } : { found, in: 'result' })
    ctx.result = { ...output, value }
  }
  // The hash key is a secret of its own: the stack redacts it from every text the model reads.
  if (o.hashKey !== undefined) layer.secrets = [o.hashKey]
  return layer
}
