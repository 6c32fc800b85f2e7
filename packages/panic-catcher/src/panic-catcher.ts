import { abortReason, LoopError, type Middleware, MiddlewareUsageError, type Next, type ToolContext, ToolError } from '@shallot/core'
import { optionsParser, truncate } from '@shallot/core/kit'
import { z } from 'zod'
import { describePanic, UNKNOWN_PAYLOAD } from './describe-panic.js'

/** The hint the model reads with a panic, unless `hint` says otherwise. */
export const DEFAULT_PANIC_HINT =
  'the tool failed unexpectedly; the same call will likely fail the same way, so change the arguments or try another approach'

const WITHHELD = '(message withheld: redaction failed)'

/** Options of {@link panicCatcher}. */
export const panicCatcherOptionsSchema = z
  .object({
    /** Longest message the model reads, `Tool "x" panicked: ` and the truncation marker included. Default 500. */
    maxMessageLength: z.number().int().min(120).max(2000).default(500),
    /** What the model is told to do about it; `false` for no hint. */
    hint: z.union([z.string().min(1).max(500), z.literal(false)]).default(DEFAULT_PANIC_HINT),
    /** Rewrites the thrown text before the model reads it, e.g. a secret scrubber. If it throws, the text is withheld. */
    redact: z
      .custom<(text: string) => string>((value) => typeof value === 'function', { error: 'must be a function (text: string) => string' })
      .optional(),
  })
  .strict()

/** What {@link panicCatcher} accepts. */
export type PanicCatcherOptions = z.input<typeof panicCatcherOptionsSchema>

const parsePanicCatcherOptions = optionsParser('panicCatcher()', panicCatcherOptionsSchema)

function isShallotError(err: unknown): boolean {
  try {
    // A broken onion contract is a bug in the stack, not in the tool: it must stay loud.
    return ToolError.is(err) || LoopError.is(err) || err instanceof MiddlewareUsageError
  } catch {
    // A Proxy that throws on every trap is certainly not one of ours.
    return false
  }
}

/**
 * The outermost layer: anything thrown below it that is not a `ToolError` or `LoopError` (by the
 * tool or by an inner layer) becomes a soft `ToolError('tool_panic')` the model reads as
 * `Tool "x" panicked: <message>`: category `recoverable`, not retryable, not safe to repeat (what
 * reached the world is unknown). Any throwable is handled, however odd; the text is cleaned and
 * capped, and the stack goes to `ctx.log.error`, never to the model. Each panic is emitted as
 * `panic-catcher.caught`.
 *
 * @example
 * const stack = createStack({ tools: [readFile], middleware: [panicCatcher(), retry(), timeout({ ms: 5000 })] })
 * // a tool that throws new TypeError("Cannot read properties of undefined (reading 'id')") yields
 * // { ok: false, error: { code: 'tool_panic', message: 'Tool "read_file" panicked: TypeError: Cannot read …' } }
 */
export function panicCatcher(options?: PanicCatcherOptions): Middleware {
  const { maxMessageLength, hint, redact } = parsePanicCatcherOptions(options)

  return async function panicCatcher(ctx: ToolContext, next: Next): Promise<void> {
    try {
      await next()
    } catch (err) {
      if (isShallotError(err)) throw err
      // A tool that gives up because the run was cancelled has not panicked.
      if (ctx.signal.aborted) throw abortReason(ctx.signal)
      throw panicError(ctx, err, { maxMessageLength, hint, redact })
    }
  }
}

/** How this layer words a panic: its parsed options. */
interface Wording {
  readonly maxMessageLength: number
  readonly hint: string | false
  readonly redact: ((text: string) => string) | undefined
}

function panicError(ctx: ToolContext, thrown: unknown, { maxMessageLength: maxLength, hint, redact }: Wording): ToolError {
  const prefix = `Tool "${ctx.call.name}" panicked: `
  const panic = describePanic(thrown, maxLength * 2)
  let text = panic.message
  if (redact !== undefined && text !== UNKNOWN_PAYLOAD) {
    try {
      text = String(redact(text))
    } catch {
      text = WITHHELD
    }
  }
  const message = truncate(`${prefix}${text}`, maxLength)
  ctx.log.error({ panic: { name: panic.name ?? panic.payload, stack: panic.stack, causes: panic.causes }, attempt: ctx.attempt }, message)
  ctx.emit('panic-catcher.caught', { name: panic.name, payload: panic.payload, message })
  return new ToolError('tool_panic', message, {
    category: 'recoverable',
    retryable: false,
    safeToRepeat: false,
    ...(hint === false ? {} : { hint }),
    cause: thrown,
    details: { name: panic.name, payload: panic.payload },
  })
}
