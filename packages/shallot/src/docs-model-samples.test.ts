import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createAgent } from '@shallot/agent'
import { defineTool, type Logger, type ModelAdapter, type ModelResponse } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import ts from 'typescript'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
// The SDK otel's own tests register, wired as an application wires it.
import { otelSdk } from '../../otel/test/world.js'

// The model-call middleware samples of docs/writing-middleware.md and the layer READMEs, run as a reader would run
// them: the block compiled as it is shown, saved in a project folder whose node_modules links the workspace's
// packages, imported, and its exports driven here. (docs.test.ts type-checks the same blocks.)

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
let project: string

/** The ts block of `doc` that defines `name`, exactly as the page shows it. */
function blockDefining(doc: string, name: string): string {
  const blocks = [...readFileSync(join(ROOT, doc), 'utf8').matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string)
  const found = blocks.filter((code) => new RegExp(`^export (const|function) ${name}\\b`, 'm').test(code))
  if (found.length !== 1) throw new Error(`${doc} should show exactly one ts block defining ${name}, found ${found.length}`)
  return found[0] as string
}

/** The block, compiled and imported from the project folder. */
async function sample<T>(doc: string, name: string): Promise<T> {
  const code = ts.transpileModule(blockDefining(doc, name), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText
  const file = join(project, `${name}.mjs`)
  writeFileSync(file, code)
  return (await import(pathToFileURL(file).href)) as T
}

function link(name: string, target: string): void {
  const at = join(project, 'node_modules', ...name.split('/'))
  mkdirSync(dirname(at), { recursive: true })
  symlinkSync(target, at, 'dir')
}

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'shallot-model-samples-'))
  for (const group of ['packages', 'examples']) {
    for (const entry of readdirSync(join(ROOT, group), { withFileTypes: true })) {
      const dir = join(ROOT, group, entry.name)
      try {
        const { name } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }
        if (name !== undefined) link(name, dir)
      } catch {
        // not a package folder
      }
    }
  }
  link('zod', dirname(realpathSync(createRequire(import.meta.url).resolve('zod/package.json'))))
})
afterAll(() => rmSync(project, { recursive: true, force: true }))

type AgentFactory = (model: ModelAdapter, tools: never[], clock?: ReturnType<typeof manualClock>) => ReturnType<typeof createAgent>

/** A model that fails as `failures` say, in turn, then answers; the virtual times it was asked at. */
function flakyModel(clock: ReturnType<typeof manualClock>, failures: unknown[], name = 'gpt-test') {
  const asked: number[] = []
  const model: ModelAdapter = {
    name,
    generate: async (): Promise<ModelResponse> => {
      asked.push(clock.now())
      const failure = failures[asked.length - 1]
      if (failure !== undefined) throw failure
      return { text: 'answered', toolCalls: [] }
    },
  }
  return { model, asked }
}

/** A provider SDK's HTTP error, as the OpenAI and Anthropic clients throw it. */
const httpError = (status: number, headers: Record<string, string> = {}) =>
  Object.assign(new Error(`${status} status code`), { status, headers })

describe('docs/writing-middleware.md, Model calls', () => {
  it('runs the page’s block, and its definition wraps model calls only, logging each call with the model that answered', async () => {
    const { timingDefinition } = await sample<{ timingDefinition: import('@shallot/core').MiddlewareDefinition }>(
      'docs/writing-middleware.md',
      'timingDefinition',
    )
    expect(timingDefinition.handles).toEqual({ tools: false, models: true })
    const lines: Array<{ fields: object; msg: string | undefined }> = []
    const logger: Logger = {
      debug: () => {},
      info: (fields, msg) => lines.push({ fields, msg }),
      warn: () => {},
      error: () => {},
      child: () => logger,
    }
    const clock = manualClock()
    const { model } = flakyModel(clock, [], 'demo')
    const agent = createAgent({ model, tools: [], clock, logger, modelMiddleware: [timingDefinition.buildModel({ label: 'x' })] })
    expect(await agent.run({ input: 'hi' })).toMatchObject({ status: 'completed', output: 'answered' })
    // Core writes an operator line of the same message once it has a logger; the layer's carries its label.
    expect(lines.filter((l) => l.msg === 'model call' && 'label' in l.fields).map((l) => l.fields)).toEqual([
      { label: 'x', model: 'demo', attempt: 1, ms: 0 },
    ])
  })
})

describe('packages/otel/README.md, Model calls', () => {
  let sdk: ReturnType<typeof otelSdk> | undefined
  afterEach(async () => {
    await sdk?.close()
    sdk = undefined
  })

  it('one chat span per model call, its retry inside it, under the run’s invoke_agent span', async () => {
    sdk = otelSdk()
    const { tracedModelAgent } = await sample<{ tracedModelAgent: AgentFactory }>('packages/otel/README.md', 'tracedModelAgent')
    const clock = manualClock()
    const { model, asked } = flakyModel(clock, [httpError(503)])
    const run = tracedModelAgent(model, [], clock).run({ input: 'hi' })
    await clock.runAll()
    expect(await run).toMatchObject({ status: 'completed', output: 'answered' })
    expect(asked).toHaveLength(2)
    const spans = sdk.spans()
    const chats = spans.filter((s) => s.name.startsWith('chat'))
    const agentSpan = spans.find((s) => s.name.startsWith('invoke_agent'))
    expect(chats.map((s) => s.name)).toEqual(['chat gpt-test'])
    expect(chats[0]?.parentSpanContext?.spanId).toBe(agentSpan?.spanContext().spanId)
  })
})

describe('packages/error-classifier/README.md, Model calls', () => {
  it('a 429 asking for 2 s is classified inside retry and waited out; the third attempt answers', async () => {
    const { classifiedAgent } = await sample<{ classifiedAgent: AgentFactory }>('packages/error-classifier/README.md', 'classifiedAgent')
    const clock = manualClock()
    const limited = () => httpError(429, { 'retry-after': '2' })
    const { model, asked } = flakyModel(clock, [limited(), limited()])
    const run = classifiedAgent(model, [], clock).run({ input: 'hi' })
    await clock.runAll()
    expect(await run).toMatchObject({ status: 'completed', output: 'answered' })
    expect(asked[1]).toBeGreaterThanOrEqual(2000)
    expect((asked[2] as number) - (asked[1] as number)).toBeGreaterThanOrEqual(2000)
  })

  it('the same layers classify a tool’s 429 asking for 1 s, and retry waits it out before the second call', async () => {
    const { classifiedAgent } = await sample<{ classifiedAgent: AgentFactory }>('packages/error-classifier/README.md', 'classifiedAgent')
    const clock = manualClock()
    const called: number[] = []
    const quote = defineTool({
      name: 'quote',
      description: 'A price quote',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        called.push(clock.now())
        if (called.length === 1) throw httpError(429, { 'retry-after': '1' })
        return '42 EUR'
      },
    })
    let turn = 0
    const model: ModelAdapter = {
      generate: async ({ messages }) =>
        ++turn === 1 ? { toolCalls: [{ id: 'c1', name: 'quote', args: {} }] } : { text: String(messages.at(-1)?.content), toolCalls: [] },
    }
    const run = classifiedAgent(model, [quote as never], clock).run({ input: 'price?' })
    await clock.runAll()
    expect(await run).toMatchObject({ status: 'completed', output: '42 EUR' })
    expect(called).toHaveLength(2)
    expect((called[1] as number) - (called[0] as number)).toBeGreaterThanOrEqual(1000)
  })

  it('refused credentials are not retried: the run stops asking a person for them', async () => {
    const { classifiedAgent } = await sample<{ classifiedAgent: AgentFactory }>('packages/error-classifier/README.md', 'classifiedAgent')
    const clock = manualClock()
    const { model, asked } = flakyModel(clock, [httpError(401), httpError(401), httpError(401)])
    const result = await classifiedAgent(model, [], clock).run({ input: 'hi' })
    expect(asked).toHaveLength(1)
    expect(result).toMatchObject({
      status: 'stopped',
      error: { kind: 'user_input_required', details: { reason: 'credentials', status: 401 } },
    })
  })
})

describe('packages/rate-limit/README.md, model calls', () => {
  it('the second model request of a run waits its turn: one a second', async () => {
    const { pacedAgent } = await sample<{ pacedAgent: AgentFactory }>('packages/rate-limit/README.md', 'pacedAgent')
    const clock = manualClock()
    const asked: number[] = []
    const ping = defineTool({ name: 'ping', description: 'Ping', input: z.object({}), effect: 'read', execute: () => 'pong' })
    const model: ModelAdapter = {
      name: 'gpt-test',
      generate: async () => {
        asked.push(clock.now())
        return asked.length === 1 ? { text: '', toolCalls: [{ id: 'c1', name: 'ping', args: {} }] } : { text: 'done', toolCalls: [] }
      },
    }
    const run = pacedAgent(model, [ping as never], clock).run({ input: 'hi' })
    await clock.runAll()
    expect(await run).toMatchObject({ status: 'completed', output: 'done' })
    expect(asked).toEqual([0, 1000])
  })
})
