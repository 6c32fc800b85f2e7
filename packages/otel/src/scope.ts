/** The instrumentation scope every tracer and meter of this package is named after. */
export const SCOPE = { name: '@shallot/otel', version: '0.1.0' } as const
