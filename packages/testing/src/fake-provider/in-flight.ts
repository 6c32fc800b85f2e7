import type { ServerResponse } from 'node:http'

/** The responses still being written, and who waits until none is. */
export function inFlightResponses() {
  const open = new Set<ServerResponse>()
  let idleWaiters: Array<() => void> = []
  return {
    add(res: ServerResponse): void {
      open.add(res)
    },
    leave(res: ServerResponse): void {
      open.delete(res)
      if (open.size > 0) return
      const waiters = idleWaiters
      idleWaiters = []
      for (const wake of waiters) wake()
    },
    whenIdle(): Promise<void> {
      if (open.size === 0) return Promise.resolve()
      return new Promise<void>((resolve) => idleWaiters.push(resolve))
    },
  }
}
