import { z } from 'zod'

const isFunction = (v: unknown) => typeof v === 'function'

/**
 * The zod fields of an option that reads the wall clock (epoch milliseconds: HTTP dates, TTLs that
 * several processes compare). It is `wallNow`, never `now`, so it cannot be mistaken for a `Clock`'s
 * monotonic `now()`; `now` stays as its deprecated alias for one minor version. Spread into a schema
 * and add {@link refineWallNow}; read it with {@link wallNowOf}.
 *
 * @example
 * const schema = z.object({ ...wallNowShape }).superRefine(refineWallNow)
 */
export const wallNowShape = {
  /** Wall-clock epoch milliseconds. */
  wallNow: z.custom<() => number>(isFunction, 'must be a function () => number returning wall-clock epoch milliseconds').optional(),
  /** @deprecated The old name of `wallNow`; goes in the next minor version. */
  now: z.custom<() => number>(isFunction, 'must be a function () => number returning wall-clock epoch milliseconds').optional(),
}

/** A zod refinement: `wallNow` and its deprecated alias `now` together is an error naming both. */
export function refineWallNow(options: { wallNow?: unknown; now?: unknown }, issues: z.RefinementCtx): void {
  if (options.wallNow !== undefined && options.now !== undefined) {
    issues.addIssue({ code: 'custom', path: ['now'], message: 'is the deprecated name of wallNow; give only wallNow' })
  }
}

/** The wall clock an option set asked for: `wallNow`, else the deprecated `now`, else undefined. */
export function wallNowOf(options: { wallNow?: (() => number) | undefined; now?: (() => number) | undefined }): (() => number) | undefined {
  return options.wallNow ?? options.now
}
