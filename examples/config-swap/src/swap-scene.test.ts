import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runSwapScene } from './swap-scene.js'

describe('config-swap scene', () => {
  let dir: string
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'shallot-swap-test-'))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('retries patiently before the swap and gives up at once after it, in one run', async () => {
    const scene = await runSwapScene({ dir, waitMs: 0, debounceMs: 0 })
    expect(scene.outcome.status).toBe('completed')
    expect(Object.fromEntries(scene.attempts)).toEqual({ ACME: 3, GLOBEX: 1 })
    const tools = scene.outcome.transcript.filter((m) => m.role === 'tool')
    expect(tools.map((m) => m.ok)).toEqual([true, false])
    expect(readFileSync(scene.file, 'utf8')).toContain('retry: fail-fast')
  })

  it('reloads the file between the two calls, while the agent runs', async () => {
    const { lines } = await runSwapScene({ dir, waitMs: 0, debounceMs: 0 })
    const at = (text: string) => lines.findIndex((line) => line.includes(text))
    expect(at('fetch_quote {"symbol":"ACME"}')).toBeLessThan(at('watcher: shallot.yaml reloaded; retry: fail-fast'))
    expect(at('watcher: shallot.yaml reloaded; retry: fail-fast')).toBeLessThan(at('fetch_quote {"symbol":"GLOBEX"}'))
    expect(lines.filter((line) => line.includes('retry: attempt'))).toHaveLength(2)
  })
})
