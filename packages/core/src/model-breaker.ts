/** Where a model's circuit is: `closed` sends calls, `open` skips the model, `half-open` lets one probe through. */
export type ModelCircuit = 'closed' | 'open' | 'half-open'

/**
 * The breaker of each model of a fallback chain (`createAgent({ modelBreaker })`).
 *
 * @example
 * createAgent({ model: [gpt, claude], tools, modelBreaker: { threshold: 5, cooldownMs: 60_000 } })
 */
export interface ModelBreakerOptions {
  /** Failed attempts in a row (transient errors, deadlines) that open the circuit. Default 3. */
  threshold: number
  /** How long an open circuit skips the model; a longer `Retry-After` from the provider wins. Default 30 s. */
  cooldownMs: number
}

export interface ModelBreakerState {
  readonly circuit: ModelCircuit
  readonly failures: number
  readonly openedAt: number
  readonly openMs: number
  /** Whether the one half-open probe is out. */
  readonly probing: boolean
}

export interface ModelCircuitChange {
  readonly from: ModelCircuit
  readonly to: ModelCircuit
  readonly reason: string
}

/** A verdict on one attempt: `neutral` (cancelled, a hard refusal that ends the run) decides nothing. */
export type ModelVerdict = 'success' | 'failure' | 'neutral'

export interface ModelAdmission {
  readonly pass: boolean
  /** Admitted as the half-open probe: only its verdict closes or reopens the circuit. */
  readonly probe: boolean
  readonly state: ModelBreakerState
  readonly change?: ModelCircuitChange
  /** Refused while open: how long until a probe may go. */
  readonly retryInMs?: number
}

export const CLOSED: ModelBreakerState = Object.freeze({ circuit: 'closed', failures: 0, openedAt: 0, openMs: 0, probing: false })

/**
 * The per-model breaker of a fallback chain, pure (`now` passed in, no timers): the consecutive
 * breaker of `@shallot/circuit-breaker`, with one half-open probe. Core cannot import that package
 * (it depends on core), so the few lines it needs are here.
 */
export function admitModel(state: ModelBreakerState, now: number): ModelAdmission {
  if (state.circuit === 'closed') return { pass: true, probe: false, state }
  if (state.circuit === 'open') {
    // A time in the future came from another clock: restart the cooldown rather than wait for the gap.
    const openedAt = Math.min(state.openedAt, now)
    const remaining = openedAt + state.openMs - now
    if (remaining > 0)
      return { pass: false, probe: false, state: openedAt === state.openedAt ? state : { ...state, openedAt }, retryInMs: remaining }
    return {
      pass: true,
      probe: true,
      state: { ...state, circuit: 'half-open', probing: true },
      change: { from: 'open', to: 'half-open', reason: `cooldown of ${state.openMs} ms elapsed` },
    }
  }
  if (state.probing) return { pass: false, probe: false, state }
  return { pass: true, probe: true, state: { ...state, probing: true } }
}

/**
 * Applies one attempt's verdict; `retryAfterMs` (the provider's pushback) stretches an opening's
 * cooldown. An attempt admitted under another circuit than the current one (a concurrent run's,
 * settling late) decides nothing.
 */
export function settleModel(
  state: ModelBreakerState,
  verdict: ModelVerdict,
  now: number,
  options: ModelBreakerOptions,
  probe: boolean,
  retryAfterMs?: number,
): { state: ModelBreakerState; change?: ModelCircuitChange } {
  const openMs = Math.ceil(Math.max(options.cooldownMs, retryAfterMs ?? 0))
  if (state.circuit === 'open' || probe !== (state.circuit === 'half-open')) return { state }
  if (probe) {
    if (verdict === 'neutral') return { state: { ...state, probing: false } }
    if (verdict === 'success') return { state: CLOSED, change: { from: 'half-open', to: 'closed', reason: 'probe succeeded' } }
    return {
      state: { circuit: 'open', failures: state.failures + 1, openedAt: now, openMs, probing: false },
      change: { from: 'half-open', to: 'open', reason: 'probe failed' },
    }
  }
  if (verdict === 'neutral') return { state }
  if (verdict === 'success') return { state: state.failures === 0 ? state : CLOSED }
  const failures = state.failures + 1
  if (failures < options.threshold) return { state: { ...state, failures } }
  return {
    state: { circuit: 'open', failures, openedAt: now, openMs, probing: false },
    change: { from: 'closed', to: 'open', reason: `${failures} consecutive failures` },
  }
}
