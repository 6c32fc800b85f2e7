import { type BreakerMachine, breakerMachine } from './breaker-machine.js'
import type { CircuitBreakerConfig } from './circuit-breaker-options.js'
import { consecutive } from './consecutive.js'

/** The state machine both sides of {@link circuitBreaker} run, from the checked options: a cooldown grows to at most ten times its start unless `maxCooldownMs` says otherwise. */
export function machineOf(o: CircuitBreakerConfig): BreakerMachine {
  return breakerMachine({
    policy: o.policy ?? consecutive(),
    cooldownMs: o.cooldownMs,
    cooldownGrowth: o.cooldownGrowth,
    maxCooldownMs: o.maxCooldownMs ?? o.cooldownMs * 10,
    halfOpenProbes: o.halfOpenProbes,
    halfOpenSuccesses: o.halfOpenSuccesses,
    maxHalfOpenMs: o.maxHalfOpenMs,
  })
}
