import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createAgent } from '@shallot/agent'
import { defineTool, type ModelAdapter, type ModelResponse, ToolError } from '@shallot/core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { ConfigError, checkConfig, createStackFromConfig, loadConfig } from './index.js'

// A throwaway project: third-party packages made with defineMiddleware + createModel, installed by
// name. Each is a folder outside node_modules linked into it, as a workspace or `npm link` installs
// one, so the test imports them from source with this repository's @shallot/core.
const workspace = mkdtempSync(join(tmpdir(), 'shallot-model-config-'))
const modules = join(workspace, 'node_modules')
const require = createRequire(import.meta.url)

function install(name: string, files: Record<string, string>) {
  const source = join(workspace, 'packages', name.replace('/', '+'))
  mkdirSync(source, { recursive: true })
  writeFileSync(join(source, 'package.json'), JSON.stringify({ name, version: '1.0.0', type: 'module', exports: './index.js' }))
  for (const [file, text] of Object.entries(files)) writeFileSync(join(source, file), text)
  mkdirSync(dirname(join(modules, name)), { recursive: true })
  symlinkSync(source, join(modules, name), 'dir')
}

// A third party's model retry: repeats a failure that says it is retryable (a ToolError, as the
// error classifier's model side makes one), bumping ctx.attempt, up to maxAttempts in all.
const MODEL_RETRY = `
import { defineMiddleware } from '@shallot/core'
import { z } from 'zod'
export default defineMiddleware({
  name: '@acme/shallot-model-retry',
  description: 'repeats a retryable model failure',
  options: z.strictObject({ maxAttempts: z.number().int().min(1).max(10).default(2) }),
  createModel: ({ maxAttempts }) => async function acmeModelRetry(ctx, next) {
    for (;;) {
      try {
        return await next()
      } catch (err) {
        if (ctx.attempt >= maxAttempts || err?.retryable !== true) throw err
        ctx.attempt++
      }
    }
  },
})
`
// One that wraps both kinds of call, and shows it wrapped the model by signing its answer.
const SIGN = `
import { defineMiddleware } from '@shallot/core'
import { z } from 'zod'
export const definition = defineMiddleware({
  name: '@acme/shallot-sign',
  options: z.strictObject({ by: z.string().min(1) }),
  create: () => async function acmeSignTools(_ctx, next) { await next() },
  createModel: ({ by }) => async function acmeSign(ctx, next) {
    await next()
    if (typeof ctx.response?.text === 'string') ctx.response = { ...ctx.response, text: ctx.response.text + ' — ' + by }
  },
})
`
// Tool calls only: named in modelMiddleware it is refused, naming the fix.
const TOOLS_ONLY = `
import { defineMiddleware } from '@shallot/core'
import { z } from 'zod'
export default defineMiddleware({ name: '@acme/shallot-audit', options: z.strictObject({}), create: () => async (_ctx, next) => next() })
`

beforeAll(() => {
  mkdirSync(join(modules, '@shallot'), { recursive: true })
  symlinkSync(dirname(require.resolve('zod/package.json')), join(modules, 'zod'), 'dir')
  symlinkSync(dirname(require.resolve('@shallot/core/package.json')), join(modules, '@shallot', 'core'), 'dir')
  install('@acme/shallot-model-retry', { 'index.js': MODEL_RETRY })
  install('@acme/shallot-sign', { 'index.js': SIGN })
  install('@acme/shallot-audit', { 'index.js': TOOLS_ONLY })
})
afterAll(() => rmSync(workspace, { recursive: true, force: true }))

let files = 0
const write = (text: string, file = join(workspace, `shallot-${++files}.yaml`)) => {
  writeFileSync(file, text)
  return file
}

const done = (text: string): ModelResponse => ({ text, toolCalls: [] })
const HTTP_503 = () => Object.assign(new Error('Service Unavailable'), { status: 503 })

async function failure(load: Promise<unknown>): Promise<string[]> {
  const err = await load.catch((e: unknown) => e)
  expect(ConfigError.is(err), `expected a ConfigError, got ${String(err)}`).toBe(true)
  return String(err).split('\n')
}

describe('modelMiddleware: in a config file', () => {
  it('loads a third-party model middleware by name and wraps every model call with it', async () => {
    const file = write(`stack: [retry]\nmodelMiddleware:\n  - "@acme/shallot-sign": { by: acme }\n`)
    const config = await loadConfig(file)
    expect(config.modelLayers.map((l) => l.name)).toEqual(['@acme/shallot-sign'])
    const stack = createStackFromConfig(config, { tools: [] })
    const model: ModelAdapter = { name: 'm', generate: async () => done('hello') }
    const outcome = await createAgent({ model, stack, modelMiddleware: stack.modelMiddleware }).run({ input: 'hi' })
    expect(outcome.status === 'completed' && outcome.output).toBe('hello — acme')
  })

  it('a retry policy swapped in the file mid-run changes the next model call’s retries (the built-in retry)', async () => {
    // A model that fails twice with a 503 before every answer; the classifier makes the 503 a retryable ToolError.
    const attempts: number[] = []
    let failuresLeft = 2
    let turn = 0
    const model: ModelAdapter = {
      name: 'flaky',
      async generate() {
        attempts.push(turn)
        if (failuresLeft > 0) {
          failuresLeft--
          throw HTTP_503()
        }
        failuresLeft = 2
        turn++
        return turn === 1 ? { toolCalls: [{ id: 't1', name: 'edit_config', args: {} }] } : done('finished')
      },
    }
    const file = join(workspace, 'swap.yaml')
    // The built-in retry's model side (decision 510), around the classifier's (decision 520); a 1 ms backoff.
    const patient = `modelMiddleware:\n  - retry: retries\n  - error-classifier\npolicies:\n  retries: { baseMs: 1, capMs: 1, maxAttempts: 3 }\n`
    const stack = createStackFromConfig(await loadConfig(write(`stack: []\n${patient}`, file)), {
      tools: [
        defineTool({
          name: 'edit_config',
          description: 'someone edits the file while the run goes on',
          input: z.object({}),
          effect: 'read',
          execute: async () => {
            write(`stack: []\n${patient.replace('maxAttempts: 3', 'maxAttempts: 2')}`, file)
            stack.reconfigure(await loadConfig(file))
            return 'edited'
          },
        }),
      ],
    })
    const outcome = await createAgent({ model, stack, modelMiddleware: stack.modelMiddleware }).run({ input: 'go' })
    // Turn 1: two 503s and the answer, in three attempts. Turn 2, under maxAttempts 2: two 503s and the run ends.
    expect(attempts).toEqual([0, 0, 0, 1, 1])
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error.kind).toBe('model_failed')
    expect(outcome.error.message).toBe('the model call failed after 2 attempts: HTTP 503: Service Unavailable')
    expect(outcome.error.details.failure).toBe('503 the provider failed')
  })

  it('one retry policy swapped in the file mid-run changes tool-call and model-call retries from the next call', async () => {
    // Each step is one model attempt: a 503 or an answer. The flaky tool fails twice before it succeeds.
    const steps: Array<'503' | ModelResponse> = [
      '503',
      '503',
      { toolCalls: [{ id: 'f1', name: 'flaky', args: {} }] },
      { toolCalls: [{ id: 'e1', name: 'edit_config', args: {} }] },
      { toolCalls: [{ id: 'f2', name: 'flaky', args: {} }] },
      '503',
      '503',
      done('never'),
    ]
    const modelAttempts: number[] = []
    const model: ModelAdapter = {
      name: 'flaky-model',
      async generate({ messages }) {
        modelAttempts.push(messages.filter((m) => m.role === 'assistant').length)
        const step = steps.shift()
        if (step === undefined || step === '503') throw HTTP_503()
        return step
      },
    }
    // Each tool attempt, in order: every call fails twice, then answers.
    const toolAttempts: Array<'failed' | 'answered'> = []
    let failedInARow = 0
    const flaky = defineTool({
      name: 'flaky',
      description: 'fails twice, then answers',
      input: z.object({}),
      effect: 'read',
      execute: async () => {
        if (failedInARow < 2) {
          failedInARow++
          toolAttempts.push('failed')
          throw new ToolError('unavailable', 'try again', { category: 'transient', retryable: true })
        }
        failedInARow = 0
        toolAttempts.push('answered')
        return 'fine'
      },
    })
    const file = join(workspace, 'swap-both.yaml')
    const config = (attempts: number) =>
      `stack:\n  - retry: retries\nmodelMiddleware:\n  - retry: retries\n  - error-classifier\npolicies:\n  retries: { baseMs: 1, capMs: 1, maxAttempts: ${attempts} }\n`
    const stack = createStackFromConfig(await loadConfig(write(config(3), file)), {
      tools: [
        flaky,
        defineTool({
          name: 'edit_config',
          description: 'someone lowers maxAttempts to 2 while the run goes on',
          input: z.object({}),
          effect: 'read',
          execute: async () => {
            write(config(2), file)
            stack.reconfigure(await loadConfig(file))
            return 'edited'
          },
        }),
      ],
    })
    const outcome = await createAgent({ model, stack, modelMiddleware: stack.modelMiddleware }).run({ input: 'go' })
    // Before the swap, 3 attempts: the model's first call and the tool's first call each succeed on their third.
    // After it, 2: the tool's next call gives up after two, and so does the model's next call, which ends the run.
    expect(modelAttempts).toEqual([0, 0, 0, 1, 2, 3, 3])
    expect(toolAttempts).toEqual(['failed', 'failed', 'answered', 'failed', 'failed'])
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    expect(outcome.status === 'stopped' && outcome.error.message).toMatch(/^the model call failed after 2 attempts: /)
  })

  it('a new file that cannot be built changes neither onion; a call in flight keeps the layers it started with', async () => {
    const stack = createStackFromConfig(await loadConfig(write('stack: []\nmodelMiddleware:\n  - "@acme/shallot-sign": { by: one }\n')), {
      tools: [],
    })
    // Its model layers are fine; a tool it names does not exist, so the whole file is refused.
    const broken = await loadConfig(
      write('stack: [retry]\nmodelMiddleware:\n  - "@acme/shallot-sign": { by: two }\ntools:\n  nosuch: { retry: none }\n'),
    )
    expect(() => stack.reconfigure(broken)).toThrow(/no tool named "nosuch"/)
    let release: (() => void) | undefined
    const model: ModelAdapter = {
      name: 'm',
      generate: () =>
        release === undefined
          ? new Promise((resolve) => {
              release = () => resolve(done('slow'))
            })
          : Promise.resolve(done('fast')),
    }
    const agent = createAgent({ model, stack, modelMiddleware: stack.modelMiddleware })
    const slow = agent.run({ input: 'a' })
    await vi.waitFor(() => expect(release).toBeDefined())
    stack.reconfigure(await loadConfig(write('stack: []\nmodelMiddleware:\n  - "@acme/shallot-sign": { by: three }\n')))
    const fast = await agent.run({ input: 'b' })
    release?.()
    const outputs = [await slow, fast].map((o) => (o.status === 'completed' ? o.output : o.status))
    expect(outputs).toEqual(['slow — one', 'fast — three'])
  })

  it('without modelMiddleware the stack’s model middleware is a pass-through', async () => {
    const stack = createStackFromConfig(await loadConfig(write('stack: [retry]\n')), { tools: [] })
    const model: ModelAdapter = { name: 'm', generate: async () => done('plain') }
    const outcome = await createAgent({ model, stack, modelMiddleware: stack.modelMiddleware }).run({ input: 'hi' })
    expect(outcome.status === 'completed' && outcome.output).toBe('plain')
  })
})

describe('modelMiddleware: garbage is refused with its line', () => {
  it('names a layer that wraps tool calls only, and the fix', async () => {
    const lines = await failure(loadConfig(write('stack: []\nmodelMiddleware:\n  - "@acme/shallot-audit"\n  - idempotency\n')))
    expect(lines).toContainEqual(
      expect.stringMatching(/:3: modelMiddleware\[0\]: "@acme\/shallot-audit" wraps tool calls only.*createModel.*list it under stack:/),
    )
    expect(lines).toContainEqual(expect.stringMatching(/:4: modelMiddleware\[1\]: "idempotency" wraps tool calls only/))
  })

  it('names an unknown layer, with a suggestion for a typo', async () => {
    const lines = await failure(loadConfig(write('stack: []\nmodelMiddleware:\n  - error-clasifier\n  - "@acme/no-such-layer"\n')))
    expect(lines).toContainEqual(
      expect.stringMatching(/:3: modelMiddleware\[0\]: unknown middleware "error-clasifier".*did you mean 'error-classifier'\?/),
    )
    expect(lines).toContainEqual(
      expect.stringMatching(/:4: modelMiddleware\[1\]: unknown middleware "@acme\/no-such-layer".*npm install @acme\/no-such-layer/),
    )
  })

  it('checks options with the layer’s own schema, at the option’s line, policies included', async () => {
    const text = [
      'stack: []',
      'modelMiddleware:',
      '  - error-classifier:',
      '      maxLength: 5',
      '  - "@acme/shallot-model-retry": slow',
      '  - "@acme/shallot-sign": nope',
      'policies:',
      '  slow: { maxAttempts: 0 }',
    ].join('\n')
    const lines = await failure(loadConfig(write(text)))
    expect(lines).toContainEqual(expect.stringMatching(/:4: modelMiddleware\[0\]\.error-classifier\.maxLength: /))
    expect(lines).toContainEqual(
      expect.stringMatching(/:6: modelMiddleware\[2\]\["@acme\/shallot-sign"\]: unknown policy "nope"; known policies: slow/),
    )
    expect(lines).toContainEqual(expect.stringMatching(/:8: policies\.slow\.maxAttempts: /))
  })

  it('refuses __proto__, a layer listed twice, two layers in one entry, and a list that is not one', async () => {
    const proto = await failure(loadConfig(write('stack: []\nmodelMiddleware:\n  - error-classifier: { __proto__: { polluted: true } }\n')))
    expect(proto.join('\n')).toMatch(/:3: .*__proto__/)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    const twice = await failure(loadConfig(write('stack: []\nmodelMiddleware:\n  - error-classifier\n  - error-classifier\n')))
    expect(twice).toContainEqual(
      expect.stringMatching(/:4: modelMiddleware\[1\]: "error-classifier" is already in modelMiddleware at modelMiddleware\[0\]/),
    )
    const pair = await failure(loadConfig(write('stack: []\nmodelMiddleware:\n  - { error-classifier: {}, otel: {} }\n')))
    expect(pair).toContainEqual(expect.stringMatching(/:3: modelMiddleware\[0\]: names 2 middlewares/))
    const notList = await failure(loadConfig(write('stack: []\nmodelMiddleware: error-classifier\n')))
    expect(notList).toContainEqual(expect.stringMatching(/:2: modelMiddleware: /))
  })

  it('shallot check reports the same problems, and a wrong model entry does not hide a wrong stack entry', async () => {
    const check = await checkConfig(write('stack:\n  - retyr\nmodelMiddleware:\n  - "@acme/shallot-audit"\n'))
    expect(check.issues.map((i) => [i.line, i.path])).toEqual([
      [2, 'stack[0]'],
      [4, 'modelMiddleware[0]'],
    ])
  })
})
