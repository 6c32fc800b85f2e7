import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createAgent } from '@shallot/agent'
import { defineTool } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ConfigError, createStackFromConfig, loadConfig } from './index.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-resilience-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const write = (text: string) => {
  const file = join(dir, `shallot-${++files}.yaml`)
  writeFileSync(file, text)
  return file
}

const status = defineTool({
  name: 'deploy_status',
  description: 'Read the deployment status',
  input: z.object({ service: z.string() }),
  effect: 'read',
  execute: () => 'deploying',
})

/** The ConfigError a file's stack raises, wherever it is found (loading or building). */
async function configError(text: string): Promise<ConfigError> {
  const file = write(text)
  try {
    createStackFromConfig(await loadConfig(file), { tools: [status] })
  } catch (err) {
    if (ConfigError.is(err)) return err
    throw err
  }
  throw new Error('the config was accepted')
}

describe('the config file and the resilience options', () => {
  it('accepts halfOpenSuccesses and convergence, and the stack built from it uses them', async () => {
    const file = write(
      [
        'stack:',
        '  - stuck-loop:',
        '      convergence: { similarity: 0.9, after: 3, action: ask }',
        '  - circuit-breaker: { cooldownMs: 1000, halfOpenProbes: 3, halfOpenSuccesses: 2 }',
        '',
      ].join('\n'),
    )
    const stack = createStackFromConfig(await loadConfig(file), { tools: [status], clock: manualClock() })
    const agent = createAgent({
      model: scriptedModel([{ text: 'Checking again.', toolCalls: [{ name: 'deploy_status', args: { service: 'api' } }] }], {
        onEnd: 'repeat',
      }),
      stack,
    })
    expect(await agent.run({ input: 'wait for the deploy' })).toMatchObject({
      status: 'stopped',
      turns: 3,
      error: { kind: 'user_input_required' },
    })
  })

  it.each([
    [
      'stack:\n  - circuit-breaker:\n      halfOpenProbes: 2\n      halfOpenSuccesses: 3\n',
      'stack[0].circuit-breaker.halfOpenSuccesses',
      4,
      /at most halfOpenProbes \(2\)/,
    ],
    ['stack:\n  - circuit-breaker:\n      halfOpenSuccesses: 0\n', 'stack[0].circuit-breaker.halfOpenSuccesses', 3, /./],
    ['stack:\n  - circuit-breaker:\n      halfOpenSuccesses: two\n', 'stack[0].circuit-breaker.halfOpenSuccesses', 3, /./],
    ['stack:\n  - stuck-loop:\n      convergence:\n        similarity: 1.5\n', 'stack[0].stuck-loop.convergence.similarity', 4, /./],
    ['stack:\n  - stuck-loop:\n      convergence:\n        after: 1\n', 'stack[0].stuck-loop.convergence.after', 4, /./],
    ['stack:\n  - stuck-loop:\n      convergence:\n        action: panic\n', 'stack[0].stuck-loop.convergence.action', 4, /./],
    ['stack:\n  - retry:\n      onRetry: stop\n', 'stack[0].retry.onRetry', 3, /./],
  ])('refuses %j at its line', async (text, path, line, message) => {
    const err = await configError(text)
    expect(err.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path, line, message: expect.stringMatching(message) })]))
  })
})
