import type { Counter, Histogram, Meter } from '@opentelemetry/api'

/** Bucket boundaries the GenAI conventions advise for `gen_ai.client.operation.duration` (seconds). */
export const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
/** Bucket boundaries the GenAI conventions advise for `gen_ai.client.token.usage`. */
export const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]

/** Every instrument shallot records, created once per meter. */
export interface Instruments {
  readonly duration: Histogram
  readonly tokens: Histogram
  readonly attempts: Histogram
  readonly retries: Counter
  readonly circuitChanges: Counter
  readonly refusals: Counter
  readonly replays: Counter
  readonly unknownOutcomes: Counter
}

const cache = new WeakMap<Meter, Instruments>()

/** The instruments of `meter`; two layers and a model wrapper on one meter share them. */
export function instrumentsOf(meter: Meter): Instruments {
  const known = cache.get(meter)
  if (known !== undefined) return known
  const made: Instruments = {
    duration: meter.createHistogram('gen_ai.client.operation.duration', {
      description: 'GenAI operation duration',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
    tokens: meter.createHistogram('gen_ai.client.token.usage', {
      description: 'Number of input and output tokens used',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    }),
    attempts: meter.createHistogram('shallot.tool.attempts', {
      description: 'Attempts per logical tool call (1 when nothing was retried)',
      unit: '{attempt}',
      advice: { explicitBucketBoundaries: [1, 2, 3, 4, 5, 6, 8, 10] },
    }),
    retries: meter.createCounter('shallot.retry.scheduled', { description: 'Retries scheduled, by error code', unit: '{retry}' }),
    circuitChanges: meter.createCounter('shallot.circuit.state_changes', {
      description: 'Circuit breaker state changes',
      unit: '{change}',
    }),
    refusals: meter.createCounter('shallot.refusals', { description: 'Calls a layer refused before the tool ran', unit: '{call}' }),
    replays: meter.createCounter('shallot.idempotency.replays', { description: 'Calls answered from a stored result', unit: '{call}' }),
    unknownOutcomes: meter.createCounter('shallot.idempotency.outcome_unknown', {
      description: 'Calls whose effect on the world is unknown (a write that may or may not have happened)',
      unit: '{call}',
    }),
  }
  cache.set(meter, made)
  return made
}
