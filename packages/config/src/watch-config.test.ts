import { mkdtempSync, rmSync, watch, writeFileSync } from 'node:fs'
import { rename } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineTool, type Logger, silentLogger } from '@shallot/core'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { ConfigError, createStackFromConfig, loadConfig, type ShallotConfig, watchConfig } from './index.js'

const echo = defineTool({ name: 'echo', description: 'echo', input: z.object({}), effect: 'read', execute: async () => 'ok' })

/** Resolves on the next change fs.watch reports for `file`: proof that the event has been delivered. */
function nextChange(file: string, dir: string): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(dir, (_event, name) => {
      if (name === null || file.endsWith(name)) {
        watcher.close()
        resolve()
      }
    })
  })
}

describe('watchConfig', () => {
  let dir: string
  let file: string
  let stop: (() => void) | undefined
  const errors: unknown[] = []
  const logged: unknown[] = []
  const logger: Logger = { ...silentLogger, error: (obj) => logged.push(obj), child: () => logger }

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    dir = mkdtempSync(join(tmpdir(), 'shallot-watch-'))
    file = join(dir, 'shallot.yaml')
    errors.length = 0
    logged.length = 0
  })
  afterEach(() => {
    stop?.()
    stop = undefined
    vi.useRealTimers()
    rmSync(dir, { recursive: true, force: true })
  })

  async function start(text: string) {
    writeFileSync(file, text)
    const stack = createStackFromConfig(await loadConfig(file), { tools: [echo], logger })
    const reloads: ShallotConfig[] = []
    stop = watchConfig(file, stack, { debounceMs: 20, onReload: (c) => reloads.push(c), onError: (e) => errors.push(e) })
    return { stack, reloads }
  }

  const waitForIt = (check: () => void) => vi.waitFor(check, { timeout: 5000, interval: 5 })

  it('applies a changed file to the running stack', async () => {
    const { stack, reloads } = await start('stack:\n  - retry: { maxAttempts: 2 }\n')
    writeFileSync(file, 'stack:\n  - retry: { maxAttempts: 4 }\n  - timeout: { ms: 1000 }\n')
    await waitForIt(() => expect(reloads).toHaveLength(1))
    expect(stack.config).toBe(reloads[0])
    expect(stack.config.layers.map((l) => [l.name, l.base.raw])).toEqual([
      ['retry', { maxAttempts: 4 }],
      ['timeout', { ms: 1000 }],
    ])
  })

  it('sees a file saved by renaming a new one over it, as editors do', async () => {
    const { stack, reloads } = await start('stack: [retry]\n')
    writeFileSync(join(dir, '.shallot.yaml.tmp'), 'stack: [timeout]\n')
    await rename(join(dir, '.shallot.yaml.tmp'), file)
    await waitForIt(() => expect(reloads).toHaveLength(1))
    expect(stack.config.layers.map((l) => l.name)).toEqual(['timeout'])
  })

  it('rejects an invalid file, logs it, reports it and keeps the current configuration', async () => {
    const { stack, reloads } = await start('stack: [retry]\n')
    const before = stack.config
    writeFileSync(file, 'stack:\n  - retry: { maxAttempts: many }\n')
    await waitForIt(() => expect(errors).toHaveLength(1))
    expect(ConfigError.is(errors[0])).toBe(true)
    expect(errors[0]).toMatchObject({ line: 2, path: 'stack[0].retry.maxAttempts' })
    expect(logged).toEqual([expect.objectContaining({ file, issues: (errors[0] as ConfigError).issues })])
    expect(stack.config).toBe(before)
    expect(reloads).toHaveLength(0)
    expect((await stack.dispatch({ id: 'c', name: 'echo', args: {} })).ok).toBe(true)
  })

  it('rejects a file the stack cannot build (a tool it does not have)', async () => {
    const { stack } = await start('stack: [retry]\n')
    const before = stack.config
    writeFileSync(file, 'stack: [retry]\ntools:\n  ecko: { retry: none }\n')
    await waitForIt(() => expect(errors).toHaveLength(1))
    expect(errors[0]).toMatchObject({ path: 'tools.ecko', hint: "did you mean 'echo'?" })
    expect(stack.config).toBe(before)
  })

  it('survives any number of hostile rewrites of a JSON file, then applies a good one', async () => {
    file = join(dir, 'shallot.json')
    const { stack, reloads } = await start('{"stack": ["retry"]}')
    const before = stack.config
    const hostile = (i: number) =>
      [
        `{"stack": ${'['.repeat(3000 + i)}${']'.repeat(3000 + i)}}`,
        `{"stack": ["retry"], "tools": {"__proto__": {"retry": "none"}}, "n": ${i}}`,
        `{"stack": ["retry",]${' '.repeat(i)}}`,
        `{"stack": ["retry"]}${' '.repeat(1024 * 1024 + i)}`,
      ][i % 4] as string
    for (let i = 0; i < 12; i++) {
      writeFileSync(file, hostile(i))
      await waitForIt(() => expect(errors).toHaveLength(i + 1))
      expect(ConfigError.is(errors[i]), String(errors[i])).toBe(true)
    }
    expect(stack.config).toBe(before)
    writeFileSync(file, '{"stack": ["timeout"]}')
    await waitForIt(() => expect(reloads).toHaveLength(1))
    expect(stack.config.layers.map((l) => l.name)).toEqual(['timeout'])
  })

  it('reads a burst of writes once, after the quiet time', async () => {
    const { stack, reloads } = await start('stack: [retry]\n')
    for (const ms of [10, 20, 30]) {
      const seen = nextChange(file, dir)
      writeFileSync(file, `stack:\n  - timeout: { ms: ${ms} }\n`)
      await seen
    }
    expect(vi.getTimerCount()).toBe(1)
    await waitForIt(() => expect(reloads).toHaveLength(1))
    expect(stack.config.layers[0]?.base.raw).toEqual({ ms: 30 })
  })

  it('stops watching when closed: a later change is not read and no timer is left', async () => {
    const { reloads } = await start('stack: [retry]\n')
    stop?.()
    stop = undefined
    const seen = nextChange(file, dir)
    writeFileSync(file, 'stack: [timeout]\n')
    await seen
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(vi.getTimerCount()).toBe(0)
    await vi.runAllTimersAsync()
    expect(reloads).toHaveLength(0)
  })
})
