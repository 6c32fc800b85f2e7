import type { RunContext } from '@shallot/core'

/**
 * The breaker key each tool's calls last used, remembered per run, for `describeTool`: a run is
 * told only about the circuits its own calls use. A key function may put a tenant in the key, so
 * the key another run used names another tenant's circuit. Forgotten with the run; at most
 * `maxKeys` tools per run.
 *
 * @example
 * const keys = runKeys(1000)
 * keys.note(ctx.run, 'fetch_url', 'down.test')
 * keys.get(run, 'fetch_url') // 'down.test' for that run only
 */
export function runKeys(maxKeys: number) {
  const byRun = new WeakMap<RunContext, Map<string, string>>()
  return {
    note(run: RunContext, tool: string, key: string): void {
      let keys = byRun.get(run)
      if (keys === undefined) byRun.set(run, (keys = new Map()))
      else if (keys.get(tool) === key) return
      if (keys.size >= maxKeys && !keys.has(tool)) keys.delete(keys.keys().next().value as string)
      keys.set(tool, key)
    },
    get: (run: RunContext, tool: string): string | undefined => byRun.get(run)?.get(tool),
  }
}
