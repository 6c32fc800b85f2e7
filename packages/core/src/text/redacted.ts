/**
 * What every redacted span of model text becomes.
 *
 * @example
 * sanitize('token ghp_0123456789abcdefghijABCDEFGHIJ') // `token ${REDACTED}`
 */
export const REDACTED = '[redacted]'
