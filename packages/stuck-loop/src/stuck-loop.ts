import { LoopError, type Middleware, sanitize, type ToolContext, ToolError } from '@shallot/core'
import { callNext, canonicalJson, hashOf, optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import { convergence, convergenceOptionsSchema } from './convergence.js'
import { entryOf, hasTool, judge, ledgerOf, recordFailure, recordSuccess, touch } from './loop-ledger.js'
import { normalizeMessage } from './normalize-message.js'
import { loopDetected, refusal } from './refusal.js'

const count = (min: number) => z.number().int().min(min)

/**
 * Options of {@link stuckLoop}. Every threshold that leads to a refusal must stay below `stopAfter`,
 * so the model always reads a refusal before the run ends; the defaults of `flailAfter` and
 * `stopAfter` follow `refuseAfter` so that changing one option alone stays valid.
 */
export const stuckLoopOptionsSchema = z
  .object({
    /** Identical failures (same arguments, same outcome) after which the next identical call is refused. Default 2. */
    refuseAfter: count(1).default(2),
    /** Failures of the same arguments, whatever the error, after which the next identical call is refused. Default `refuseAfter + 1` (3), kept below `stopAfter`. */
    flailAfter: count(1).optional(),
    /** Identical attempts of a refused streak, refusals included, at which the run ends with `loop_detected`. Default `refuseAfter + 3` (5). */
    stopAfter: count(2).optional(),
    /** Identical successful results (same arguments, same value) after which the next identical call is refused. Off by default. */
    successRepeatLimit: count(1).optional(),
    /** How many distinct fingerprints the run remembers; the least recently seen is forgotten first. Default 50. */
    window: count(1).max(10_000).default(50),
    /**
     * Also stop a model that keeps giving near-identical replies and getting the same results, turn
     * after turn, whatever its calls (`{ similarity, after, window, maxChars, action }`). Off by default.
     */
    convergence: convergenceOptionsSchema.optional(),
  })
  .strict()
  .transform((o, check) => {
    const stopAfter = o.stopAfter ?? o.refuseAfter + 3
    const flailAfter = o.flailAfter ?? Math.max(o.refuseAfter, Math.min(o.refuseAfter + 1, stopAfter - 1))
    const limits = {
      refuseAfter: o.refuseAfter,
      flailAfter,
      stopAfter,
      successRepeatLimit: o.successRepeatLimit,
      window: o.window,
      convergence: o.convergence,
    }
    if (flailAfter < o.refuseAfter) {
      check.addIssue({
        code: 'custom',
        path: ['flailAfter'],
        message: `must be at least refuseAfter (${o.refuseAfter}): identical failures are also failures`,
      })
    }
    for (const key of ['refuseAfter', 'flailAfter', 'successRepeatLimit'] as const) {
      const value = limits[key]
      if (value !== undefined && value >= stopAfter) {
        check.addIssue({
          code: 'custom',
          path: [key],
          message: `must be below stopAfter (${stopAfter}), so the model reads a refusal before the run ends; raise stopAfter`,
        })
      }
    }
    return limits
  })

/** What {@link stuckLoop} accepts. */
export type StuckLoopOptions = z.input<typeof stuckLoopOptionsSchema>

const parseStuckLoopOptions = optionsParser('stuckLoop()', stuckLoopOptionsSchema)

const MAX_ERROR_TEXT = 300

function describeThrown(err: unknown): { code: string; message: string; hint: string } {
  if (ToolError.is(err)) return { code: err.code, message: err.message, hint: err.hint ?? '' }
  // Not a ToolError: the panic catcher outside will turn it into tool_panic; odd throwables must not throw here.
  let message: string
  try {
    message = err instanceof Error ? String(err.message) : typeof err === 'string' ? err : typeof err
  } catch {
    message = 'unknown error'
  }
  return { code: 'tool_panic', message, hint: '' }
}

/**
 * Stops a model that will not adapt. Each call is identified by `ctx.fingerprint` (tool + canonical
 * parsed arguments, the identity idempotency keys by too) and
 * its outcome (error code + normalized message) is counted in `run.state['shallot.stuck-loop']`. After
 * `refuseAfter` identical failures, or `flailAfter` failures of any kind, the next identical call
 * is refused before it runs with a soft `repeated_failure`; when identical attempts, refusals
 * included, reach `stopAfter`, the run ends with `LoopError('loop_detected')`. A success forgets
 * the fingerprint's failures. Place it just inside the panic catcher, so it sees outcomes after retries.
 *
 * Events: `stuck-loop.refused`, `stuck-loop.stopped`.
 *
 * @example
 * const stack = createStack({ middleware: [panicCatcher(), stuckLoop({ refuseAfter: 2, stopAfter: 5 }), retry()], tools })
 * const run = createRun()
 * await stack.dispatch(call, { run }) // the third identical failing call is refused without running
 */
export function stuckLoop(options?: StuckLoopOptions): Middleware {
  const limits = parseStuckLoopOptions(options)
  const watchSuccess = limits.successRepeatLimit !== undefined

  /** What a failed call leaves in the ledger; rethrows the failure. */
  const failed = (ctx: ToolContext, fp: string | undefined, err: unknown): never => {
    if (LoopError.is(err)) throw err
    const failure = describeThrown(err)
    const entry = touch(ledgerOf(ctx.run.state, true), fp ?? ctx.fingerprint, ctx.call.name, limits.window)
    recordFailure(
      entry,
      `e${hashOf(`${failure.code}\n${normalizeMessage(failure.message)}`)}`,
      // Kept in run.state (checkpointed) and quoted by the hard stop: no secret goes in.
      sanitize(`${failure.code}: ${failure.message}`, { maxLength: MAX_ERROR_TEXT }),
      failure.hint === '' ? '' : sanitize(failure.hint, { maxLength: 500 }),
    )
    throw err
  }

  /** What a successful call leaves in the ledger. */
  const succeeded = (ctx: ToolContext, fp: string | undefined): void => {
    const name = ctx.call.name
    // Re-read: calls running in parallel may have written the ledger while this one ran.
    const after = ledgerOf(ctx.run.state, watchSuccess)
    if (after === undefined || (fp === undefined && !watchSuccess && !hasTool(after, name))) return
    const print = fp ?? ctx.fingerprint
    recordSuccess(after, print, watchSuccess ? `v${hashOf(canonicalJson(ctx.result?.value))}` : undefined, name, limits.window)
  }

  /** Refuses (throws) a call the ledger says is a repeat; returns the call's fingerprint when it was needed. */
  const admit = (ctx: ToolContext): string | undefined => {
    const name = ctx.call.name
    const before = ledgerOf(ctx.run.state)
    // Happy path: no history for this tool means no fingerprint (and no parse) is needed before the call.
    if (before === undefined || !(watchSuccess || hasTool(before, name))) return undefined
    const fp = ctx.fingerprint
    const entry = entryOf(before, fp)
    const verdict = entry === undefined ? undefined : judge(entry, limits)
    if (entry !== undefined && verdict !== undefined) {
      touch(before, fp, name, limits.window)
      entry.attempts = verdict.count
      const fields = { reason: verdict.reason, fingerprint: fp, count: verdict.count, lastError: entry.lastError }
      if (verdict.action === 'stop') {
        ctx.emit('stuck-loop.stopped', fields)
        ctx.log.warn(fields, 'stuck-loop stopped the run: the model keeps repeating a call')
        throw loopDetected(name, fp, verdict, entry)
      }
      ctx.emit('stuck-loop.refused', fields)
      ctx.log.warn(fields, 'stuck-loop refused a repeated call')
      throw refusal(name, fp, verdict, entry)
    }
    return fp
  }

  // Reactions on next()'s promise rather than an await: a call blocked in its tool keeps no suspended frame here.
  const layer: Middleware = function stuckLoop(ctx: ToolContext, next: () => Promise<void>): Promise<void> {
    let fp: string | undefined
    try {
      fp = admit(ctx)
    } catch (refused) {
      return Promise.reject(refused)
    }
    return callNext(next).then(
      () => succeeded(ctx, fp),
      (err: unknown) => failed(ctx, fp, err),
    )
  }
  if (limits.convergence !== undefined) layer.observeTurn = convergence(limits.convergence)
  return layer
}
