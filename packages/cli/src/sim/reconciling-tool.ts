import type { AnyTool, Clock, ReconcileAnswer, ToolExecuteContext } from '@shallot/core'

/** What the simulated service remembers: every write that landed, by the key it was sent with. */
export interface Ledger {
  /** Faulted attempts that landed anyway (the response was lost, not the request). */
  landedFaults: number
}

export interface ReconcilingOptions {
  clock: Clock
  /** Seeded, apart from the fault draws, so the faults stay those of the other stacks. */
  random: () => number
  /** Virtual latency of one lookup. */
  latencyMs: number
}

const isThenable = (value: unknown): value is PromiseLike<unknown> => typeof (value as PromiseLike<unknown> | null)?.then === 'function'

/**
 * Whether a failed attempt may have reached the service: a 429 and a refused connection were not
 * processed (core's request fates); a timeout, a reset or a 5xx may have been, and half of those did.
 */
function mayHaveLanded(err: unknown): boolean {
  const { status, code } = (typeof err === 'object' && err !== null ? err : {}) as { status?: unknown; code?: unknown }
  return status !== 429 && code !== 'ECONNREFUSED'
}

/**
 * A simulated write tool whose service keeps a ledger by idempotency key and can be asked about it:
 * each attempt that succeeds lands, half of the attempts that fail after the request may have
 * reached the service land too, and `reconcile` looks the key up once that attempt has settled (a
 * lookup answers what the service did, not what the client saw).
 *
 * @example
 * const { tool, ledger } = reconcilingTool(chaosTool(base, { clock, failRate: 0.1 }), { clock, random, latencyMs: 25 })
 */
export function reconcilingTool(tool: AnyTool, { clock, random, latencyMs }: ReconcilingOptions): { tool: AnyTool; ledger: Ledger } {
  const ledger: Ledger = { landedFaults: 0 }
  const landed = new Map<string, unknown>()
  const settling = new Map<string, Promise<void>>()
  const keyOf = (context: ToolExecuteContext) => context.idempotencyKey ?? context.call.id
  const execute = (args: unknown, context: ToolExecuteContext): unknown => {
    const key = keyOf(context)
    const value = tool.execute(args, context)
    if (!isThenable(value)) {
      landed.set(key, value)
      return value
    }
    const answered = Promise.resolve(value).then(
      (v) => {
        landed.set(key, v)
        return v
      },
      (err: unknown) => {
        if (mayHaveLanded(err) && random() < 0.5) {
          ledger.landedFaults++
          landed.set(key, (args as { step: unknown }).step)
        }
        throw err
      },
    )
    settling.set(
      key,
      answered.then(
        () => {},
        () => {},
      ),
    )
    return answered
  }
  const reconcile = async (_args: unknown, context: ToolExecuteContext): Promise<ReconcileAnswer> => {
    const key = keyOf(context)
    await settling.get(key)
    if (latencyMs > 0) await clock.sleep(latencyMs, context.signal)
    return landed.has(key) ? { status: 'applied', result: landed.get(key) } : { status: 'not_applied' }
  }
  return { tool: { ...tool, execute, reconcile }, ledger }
}
