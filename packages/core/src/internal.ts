/**
 * `@shallot/core/internal`: deprecated alias of `@shallot/core/kit` (decision 535), kept for 0.2 and
 * removed in 0.3. Import from `@shallot/core/kit` instead; docs/author-kit.md documents every name.
 * The names below the kit's were never used outside core and are not part of the kit; they go with
 * this entry.
 *
 * @deprecated import from `@shallot/core/kit`.
 */

/** @deprecated not part of the author kit (decision 535); goes with `@shallot/core/internal` in 0.3. */
export { hashOfNamed } from './canonical.js'
/** @deprecated not part of the author kit (decision 535); goes with `@shallot/core/internal` in 0.3. */
export type { EscalationPolicy } from './channel.js'
/** @deprecated `trustedMiddleware` (main entry) marks a layer; goes with `@shallot/core/internal` in 0.3. */
export { isTrustedMiddleware, TRUSTED_MIDDLEWARE } from './compose.js'
export * from './kit.js'
/** @deprecated not part of the author kit (decision 535); goes with `@shallot/core/internal` in 0.3. */
export { renderValue } from './render.js'
/** @deprecated not part of the author kit (decision 535); goes with `@shallot/core/internal` in 0.3. */
export { StepBudget } from './run.js'
/** @deprecated not part of the author kit (decision 535); goes with `@shallot/core/internal` in 0.3. */
export { describeShape, jsonSchemaOf } from './shape.js'
/** @deprecated `sanitize` (main entry) strips them; goes with `@shallot/core/internal` in 0.3. */
export { stripInvisible } from './text/invisible.js'
/** @deprecated not part of the author kit (decision 535); goes with `@shallot/core/internal` in 0.3. */
export { REDACTED } from './text/redacted.js'
/** @deprecated not part of the author kit (decision 535); goes with `@shallot/core/internal` in 0.3. */
export { unknownTool } from './tool-refusals.js'
