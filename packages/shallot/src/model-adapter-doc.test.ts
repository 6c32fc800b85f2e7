import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { createAgent, defaultMiddleware, defaultModelMiddleware, defineTool, LoopError, type ModelAdapter } from './index.js'

// docs/model-adapter.md's adapter and its usage, run as written against a local server that speaks the
// Chat Completions protocol. The blocks are written into this package (so `shallot` resolves) and imported.

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const DOC = join(ROOT, 'docs', 'model-adapter.md')
const RUN_DIR = join(ROOT, 'packages', 'shallot', '.docs-run', `model-adapter-${process.pid}`)

/** The ts block of the doc whose first line names `file`. */
function block(file: string): string {
  for (const match of readFileSync(DOC, 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)) {
    const code = match[1] as string
    if (code.startsWith(`// ${file}\n`)) return code
  }
  throw new Error(`docs/model-adapter.md has no ts block starting with // ${file}`)
}

type Handler = (body: ChatBody, req: IncomingMessage, res: ServerResponse) => void
interface ChatBody {
  model: string
  messages: Array<Record<string, unknown>>
  tools?: Array<{ type: string; function: { name: string; description: string; parameters: Record<string, unknown> } }>
}

let server: Server
let baseUrl: string
let handlers: Handler[] = []
const received: Array<{ body: ChatBody; authorization: string | undefined; path: string | undefined }> = []
const sockets = new Set<import('node:net').Socket>()

function reply(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}
const message = (m: Record<string, unknown>) => ({ choices: [{ index: 0, message: { role: 'assistant', ...m } }] })

beforeAll(async () => {
  mkdirSync(RUN_DIR, { recursive: true })
  writeFileSync(join(RUN_DIR, 'chat-completions.ts'), block('chat-completions.ts'))
  writeFileSync(join(RUN_DIR, 'agent.ts'), block('agent.ts'))
  server = createServer((req, res) => {
    let text = ''
    req.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8')
    })
    req.on('end', () => {
      const body = JSON.parse(text) as ChatBody
      received.push({ body, authorization: req.headers.authorization, path: req.url })
      const handler = handlers.shift()
      if (handler === undefined) reply(res, 500, { error: 'no scripted answer left' })
      else handler(body, req, res)
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
})

afterAll(async () => {
  rmSync(RUN_DIR, { recursive: true, force: true })
  for (const socket of sockets) socket.destroy()
  await new Promise((done) => server.close(done))
})

async function adapter(): Promise<(options: { baseUrl: string; apiKey: string; model: string }) => ModelAdapter> {
  const module = (await import(join(RUN_DIR, 'chat-completions.ts'))) as {
    chatCompletionsModel: (options: { baseUrl: string; apiKey: string; model: string }) => ModelAdapter
  }
  return module.chatCompletionsModel
}

const weather = defineTool({
  name: 'get_weather',
  description: 'Current temperature of a city',
  input: z.object({ city: z.string().min(1) }),
  effect: 'read',
  execute: ({ city }) => ({ city, celsius: 12 }),
})

describe('docs/model-adapter.md', () => {
  it("runs the usage block as written: the model's tool call runs through the stack and its answer ends the run", async () => {
    received.length = 0
    handlers = [
      (body, _req, res) => {
        expect(body.tools?.map((t) => t.function.name)).toEqual(['get_weather'])
        expect(body.tools?.[0]?.function.parameters).toMatchObject({ type: 'object', properties: { city: { type: 'string' } } })
        reply(
          res,
          200,
          message({
            content: null,
            tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
          }),
        )
      },
      (body, _req, res) => {
        const tool = body.messages.at(-1) as { role: string; tool_call_id: string; content: string }
        expect(tool).toMatchObject({ role: 'tool', tool_call_id: 'call_a' })
        reply(res, 200, message({ content: `It is ${JSON.parse(tool.content).celsius} °C in Oslo.` }))
      },
    ]
    const logged: unknown[] = []
    vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void logged.push(args.join(' ')))
    vi.stubEnv('OPENAI_BASE_URL', baseUrl)
    vi.stubEnv('OPENAI_API_KEY', 'sk-doc-test')
    try {
      await import(join(RUN_DIR, 'agent.ts'))
    } finally {
      vi.unstubAllEnvs()
    }
    expect(logged).toEqual(['It is 12 °C in Oslo.'])
    expect(received.map((r) => [r.path, r.authorization, r.body.model])).toEqual([
      ['/v1/chat/completions', 'Bearer sk-doc-test', 'gpt-4.1-mini'],
      ['/v1/chat/completions', 'Bearer sk-doc-test', 'gpt-4.1-mini'],
    ])
    // The second request carries the whole transcript in the provider's shape.
    expect(received[1]?.body.messages).toEqual([
      { role: 'user', content: 'How warm is it in Oslo?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"city":"Oslo","celsius":12}' },
    ])
  })

  it('retries a 429 from the provider and completes', async () => {
    const chatCompletionsModel = await adapter()
    handlers = [(_b, _r, res) => reply(res, 429, { error: 'slow down' }), (_b, _r, res) => reply(res, 200, message({ content: 'fine' }))]
    const model = chatCompletionsModel({ baseUrl, apiKey: 'k', model: 'm' })
    const outcome = await createAgent({
      model,
      tools: [weather],
      middleware: defaultMiddleware(),
      modelMiddleware: defaultModelMiddleware({ retry: { baseMs: 0 } }),
    }).run({
      input: 'hi',
    })
    expect(outcome).toMatchObject({ status: 'completed', output: 'fine', steps: 2 })
  })

  it('ends the run on a 401 as user_input_required (credentials), without the API key in the error or the report', async () => {
    const chatCompletionsModel = await adapter()
    handlers = [(_b, _r, res) => reply(res, 401, { error: 'bad key' })]
    const model = chatCompletionsModel({ baseUrl, apiKey: 'sk-secret-123', model: 'm' })
    const outcome = await createAgent({
      model,
      tools: [weather],
      middleware: defaultMiddleware(),
      modelMiddleware: defaultModelMiddleware(),
    }).run({ input: 'hi' })
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    // The default model stack's error classifier names the fix; a bare model call says model_failed.
    expect(outcome.error).toMatchObject({
      kind: 'user_input_required',
      message: 'the model provider refused the credentials (401)',
      details: { status: 401, reason: 'credentials' },
    })
    expect(`${outcome.error.message} ${outcome.report.text}`).not.toContain('sk-secret-123')
    expect(handlers).toEqual([])
  })

  it('passes arguments that are not JSON on, so the model reads a soft invalid_arguments and tries again', async () => {
    const chatCompletionsModel = await adapter()
    received.length = 0
    handlers = [
      (_b, _r, res) =>
        reply(
          res,
          200,
          message({ tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": Oslo' } }] }),
        ),
      (body, _r, res) => {
        const tool = body.messages.at(-1) as { content: string }
        expect(JSON.parse(tool.content)).toMatchObject({ error: 'invalid_arguments' })
        reply(
          res,
          200,
          message({ tool_calls: [{ id: 'c2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] }),
        )
      },
      (_b, _r, res) => reply(res, 200, message({ content: 'done' })),
    ]
    const model = chatCompletionsModel({ baseUrl, apiKey: 'k', model: 'm' })
    const outcome = await createAgent({
      model,
      tools: [weather],
      middleware: defaultMiddleware(),
      modelMiddleware: defaultModelMiddleware(),
    }).run({ input: 'weather?' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'done' })
    expect(received).toHaveLength(3)
  })

  it('aborts the HTTP request when the run is cancelled, and ends the run as cancelled', async () => {
    const chatCompletionsModel = await adapter()
    const controller = new AbortController()
    let closed!: () => void
    const requestClosed = new Promise<void>((done) => {
      closed = done
    })
    handlers = [
      (_b, req, res) => {
        // Never answers; the adapter must give up when the run's signal aborts.
        res.on('close', closed)
        req.socket.on('close', closed)
        controller.abort(new Error('user pressed stop'))
      },
    ]
    const model = chatCompletionsModel({ baseUrl, apiKey: 'k', model: 'm' })
    const outcome = await createAgent({
      model,
      tools: [weather],
      middleware: defaultMiddleware(),
      modelMiddleware: defaultModelMiddleware(),
    }).run({
      input: 'hi',
      signal: controller.signal,
    })
    expect(outcome.status).toBe('stopped')
    if (outcome.status === 'stopped') expect(LoopError.is(outcome.error) && outcome.error.kind).toBe('cancelled')
    await requestClosed
  })

  it('fails the run with a clear message when the provider answers without a message', async () => {
    const chatCompletionsModel = await adapter()
    handlers = [(_b, _r, res) => reply(res, 200, { choices: [] })]
    const model = chatCompletionsModel({ baseUrl, apiKey: 'k', model: 'm' })
    const outcome = await createAgent({
      model,
      tools: [weather],
      middleware: defaultMiddleware(),
      modelMiddleware: defaultModelMiddleware(),
    }).run({ input: 'hi' })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    if (outcome.status === 'stopped') expect(outcome.error.message).toContain('answered without choices[0].message')
  })
})
