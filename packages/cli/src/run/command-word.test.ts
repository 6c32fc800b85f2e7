import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fakeProvider } from '@shallot/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../cli.js'
import { commandWord } from './command-word.js'
import { tempDir } from './run.test-helper.js'

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  vi.unstubAllEnvs()
})

/** A folder holding an executable `shallot`, as a global install leaves one. */
function binWithShallot(root: string, sub: string): string {
  const dir = join(root, sub)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'shallot'), '#!/bin/sh\n')
  chmodSync(join(dir, 'shallot'), 0o755)
  return dir
}

describe('the printed resume command is one the person can paste', { timeout: 30_000 }, () => {
  it('says npx shallot when shallot is on PATH only through npm (node_modules/.bin), shallot when installed globally', async () => {
    const { root, remove } = await tempDir()
    cleanups.push(remove)
    const projectBin = binWithShallot(root, 'app/node_modules/.bin')
    const globalBin = binWithShallot(root, 'global/bin')
    expect(commandWord({ PATH: `${projectBin}:/usr/bin` })).toBe('npx shallot')
    expect(commandWord({ PATH: `${projectBin}/:${globalBin}` })).toBe('shallot')
    expect(commandWord({})).toBe('npx shallot')
    expect(commandWord({ PATH: `::${join(root, 'nothing')}:${join(root, 'global')}` })).toBe('npx shallot')
  })

  it.each([
    ['a project install (shallot only in node_modules/.bin)', 'npx shallot resume', 'app/node_modules/.bin'],
    ['a global install', 'shallot resume', 'global/bin'],
  ])('shallot run with %s: the resume line starts %j', async (_name, start, sub) => {
    const { root, remove } = await tempDir()
    cleanups.push(remove)
    const fake = await fakeProvider({ script: [{ toolCalls: [{ name: 'nothing', args: {} }] }] })
    cleanups.push(() => fake.close())
    const dir = binWithShallot(root, sub)
    for (const [k, v] of Object.entries({ OPENAI_API_KEY: 'sk-x', OPENAI_BASE_URL: fake.openaiBaseURL, NO_COLOR: '1' })) vi.stubEnv(k, v)
    vi.stubEnv('PATH', `${dir}:${process.env.PATH}`)
    const out: string[] = []
    const db = join(root, 'run.db')
    const code = await main(['run', '--model', 'openai:m', '--checkpoints', db, '--max-turns', '1', '--run-id', 'r1', 'Go'], {
      out: (l) => out.push(l),
      err: (l) => expect.fail(l),
    })
    expect(code).toBe(1)
    expect(out).toContain(`  resume: ${start} r1 --checkpoints ${db} --model openai:m`)
  })
})
