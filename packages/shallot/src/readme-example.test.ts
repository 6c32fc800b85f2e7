import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { type FakeProvider, fakeProvider, scriptedModel } from '@shallot/testing'
import ts from 'typescript'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

// The samples that lead with a real model, run as a user runs them: the README's Example, the umbrella README's
// Usage and docs/model-adapter.md's aiSdkModel blocks, each transpiled as written and run by Node against a local
// OpenAI-compatible server (fakeProvider), importing the built packages by name. The README's Example runs against
// one that answers only /v1/chat/completions, as vLLM, Ollama and most proxies do: a sample that needs the Responses
// API fails there. The README's parking block runs in this process on a scripted model.

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
// Under @shallot/ai-sdk's folder: the Example imports it, and it depends on shallot (so this package cannot devDepend on it).
const RUN_DIR = join(ROOT, 'packages', 'ai-sdk', '.docs-run', `readme-example-${process.pid}`)

/** The ts blocks of a markdown file, optionally only those under one `## heading` (up to the next one). */
function tsBlocks(doc: string, section?: string): string[] {
  let text = readFileSync(join(ROOT, doc), 'utf8')
  if (section !== undefined) {
    const start = text.indexOf(`\n## ${section}\n`)
    if (start < 0) throw new Error(`${doc} has no section "## ${section}"`)
    const rest = text.slice(start + 1)
    const next = rest.indexOf('\n## ', 4)
    text = next < 0 ? rest : rest.slice(0, next)
  }
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string)
}

/** A block as the JavaScript a user's build would emit, in RUN_DIR (so `shallot` and its siblings resolve built). */
function emit(name: string, code: string, prelude = ''): string {
  const js = ts.transpileModule(code, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
  }).outputText
  const file = join(RUN_DIR, name)
  writeFileSync(file, `${prelude}${js}`)
  return file
}

/** Runs a file under plain Node, as `node file.js` would: no test runner, no source conditions. */
async function node(file: string, cwd: string, env: Record<string, string>) {
  const { NODE_OPTIONS: _, ...inherited } = process.env
  return promisify(execFile)(process.execPath, [file], { cwd, env: { ...inherited, ...env }, timeout: 30_000 })
}

let provider: FakeProvider | undefined
let project: string
beforeAll(() => {
  mkdirSync(RUN_DIR, { recursive: true })
  project = mkdtempSync(join(tmpdir(), 'shallot-readme-'))
  mkdirSync(join(project, 'src'))
  writeFileSync(join(project, 'src', 'main.rs'), 'fn main() { println!("hello from the README"); }\n')
})
afterEach(async () => {
  await provider?.close()
  provider = undefined
})
afterAll(() => {
  rmSync(RUN_DIR, { recursive: true, force: true })
  rmSync(project, { recursive: true, force: true })
})

describe("the README's Example: aiSdkModel(openai.chat('gpt-4o-mini'))", () => {
  const example = () => {
    const [block] = tsBlocks('README.md', 'Example')
    if (block === undefined || !block.includes("aiSdkModel(openai.chat('gpt-4o-mini'))"))
      throw new Error("README.md's Example no longer leads with aiSdkModel(openai.chat('gpt-4o-mini'))")
    return emit('readme-example.js', block)
  }

  it('completes against a Chat-Completions-only server: the mistyped path is a soft not_found the model reads, then the file', async () => {
    provider = await fakeProvider({
      apis: ['openai-chat'],
      script: [
        { toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
        (request) => {
          expect(JSON.parse(request.toolResults[0]?.content ?? '{}')).toMatchObject({ error: 'not_found' })
          return { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] }
        },
        (request) => ({ text: `It prints: ${request.toolResults.at(-1)?.content.trim()}` }),
      ],
    })
    const { stdout, stderr } = await node(example(), project, { OPENAI_BASE_URL: provider.openaiBaseURL, OPENAI_API_KEY: 'sk-readme' })
    expect(stdout).toBe('It prints: fn main() { println!("hello from the README"); }\n')
    expect(stderr).toBe('')
    expect(provider.requests.map((r) => [r.path, r.model, r.headers.authorization, r.toolNames])).toEqual(
      Array.from({ length: 3 }, () => ['/v1/chat/completions', 'gpt-4o-mini', 'Bearer sk-readme', ['read_file']]),
    )
  }, 60_000)

  it("takes the switch's stopped case on a bad key: the report on stderr, the key nowhere in it", async () => {
    const key = 'sk-proj-Wr0ngKeyWr0ngKeyWr0ngKeyWr0ngKeyWr0ngKey12'
    provider = await fakeProvider({
      apis: ['openai-chat'],
      script: [{ fault: 'authentication', message: `Incorrect API key provided: ${key}` }],
    })
    const { stdout, stderr } = await node(example(), project, { OPENAI_BASE_URL: provider.openaiBaseURL, OPENAI_API_KEY: key })
    expect(stdout).toBe('')
    expect(stderr).toMatch(/stopped: user_input_required/)
    expect(stderr).toMatch(/Next: Check the model provider's credentials/)
    expect(stderr).not.toContain(key.slice(8))
    expect(provider.requests).toHaveLength(1) // a 401 is not retried
  }, 60_000)
})

describe("the README's parking block: the switch's parked case", () => {
  it('parks a run whose tool says to wait 60 s, and describes it with the runId to resume', async () => {
    const block = tsBlocks('README.md', 'Example')[1]
    if (block === undefined || !block.includes("case 'parked'")) throw new Error("README.md's Example has no parking block")
    const { ToolError, defineTool } = await import('./index.js')
    const { z } = await import('zod')
    const shared = globalThis as { readmeModel?: unknown; readmeTool?: unknown }
    shared.readmeModel = scriptedModel([{ toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] }, { text: 'unreachable' }])
    shared.readmeTool = defineTool({
      name: 'read_file',
      description: 'Read a file',
      input: z.object({ path: z.string() }),
      effect: 'read',
      execute: () => {
        throw new ToolError('rate_limited', 'the file server is rate limiting', {
          category: 'transient',
          retryable: true,
          safeToRepeat: true,
          retryAfterMs: 60_000,
        })
      },
    })
    const code = block
      .replace(/^declare const model: .*$/m, 'const model = (globalThis as any).readmeModel')
      .replace(/^declare const readTool: .*$/m, 'const readTool = (globalThis as any).readmeTool')
    writeFileSync(join(RUN_DIR, 'readme-parking.ts'), code)
    const logged: string[] = []
    vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void logged.push(args.join(' ')))
    try {
      await import(join(RUN_DIR, 'readme-parking.ts'))
    } finally {
      delete shared.readmeModel
      delete shared.readmeTool
    }
    expect(logged).toHaveLength(1)
    expect(logged[0]).toMatch(
      /^waiting 60000 ms \(rate_limited from read_file\); agent\.resume\('[^']+'\) after \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
    )
  }, 60_000)
})

describe("the umbrella README's Usage", () => {
  it('charges once through aiSdkModel and the default stack, with an idempotency key', async () => {
    const [block] = tsBlocks('packages/shallot/README.md', 'Usage')
    if (block === undefined || !block.includes('aiSdkModel(')) throw new Error('packages/shallot/README.md no longer leads with aiSdkModel')
    const charge = `const charges = []
async function charge(order, cents, key) { charges.push([order, cents, typeof key]); return { chargeId: 'ch_' + charges.length } }
process.on('exit', () => process.stderr.write(JSON.stringify(charges)))
`
    provider = await fakeProvider({
      script: [
        { toolCalls: [{ name: 'charge_card', args: { order: 'ORD-2026-00042', amountCents: 1200 } }] },
        (request) => ({ text: `Done: ${request.toolResults[0]?.content}` }),
      ],
    })
    const { stdout, stderr } = await node(emit('umbrella-usage.js', block, charge), project, {
      OPENAI_BASE_URL: provider.openaiBaseURL,
      OPENAI_API_KEY: 'sk-umbrella',
    })
    expect(stdout).toBe('Done: {"chargeId":"ch_1"}\n')
    expect(JSON.parse(stderr)).toEqual([['ORD-2026-00042', 1200, 'string']])
  }, 60_000)
})

describe("docs/model-adapter.md's aiSdkModel blocks", () => {
  it('run against a local Chat Completions server through createOpenAI({ baseURL, apiKey }).chat()', async () => {
    const blocks = tsBlocks('docs/model-adapter.md', 'The short way: any AI SDK model')
    const models = blocks.find((code) => code.startsWith('// models.ts\n'))
    const run = blocks.find((code) => code.startsWith('// run.ts\n'))
    if (models === undefined || run === undefined) throw new Error('docs/model-adapter.md lost its models.ts or run.ts block')
    emit('models.js', models)
    provider = await fakeProvider({
      script: [
        { toolCalls: [{ name: 'get_weather', args: { city: 'Oslo' } }] },
        (request) => ({ text: `It is ${JSON.parse(request.toolResults[0]?.content ?? '{}').celsius} °C in Oslo.` }),
      ],
    })
    const { stdout } = await node(emit('run.js', run), project, { LLM_BASE_URL: provider.openaiBaseURL, LLM_API_KEY: 'sk-local' })
    expect(stdout).toBe('It is 12 °C in Oslo.\n')
    expect(provider.requests.map((r) => [r.api, r.path, r.model, r.system, r.headers.authorization])).toEqual([
      ['openai-chat', '/v1/chat/completions', 'llama3.1', 'Answer in one sentence.', 'Bearer sk-local'],
      ['openai-chat', '/v1/chat/completions', 'llama3.1', 'Answer in one sentence.', 'Bearer sk-local'],
    ])
  }, 60_000)
})
