import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { parseOptions } from '@shallot/core'
import { anthropicMessages } from './anthropic-messages.js'
import { inFlightResponses } from './in-flight.js'
import { openaiChat } from './openai-chat.js'
import { openaiResponses } from './openai-responses.js'
import { planReply } from './plan-reply.js'
import { play } from './play.js'
import { viewOf } from './request-view.js'
import { optionsSchema, schemaOf } from './turn-schema.js'
import type { FakeApi, FakeOutcome, FakeProvider, FakeProviderOptions, FakeReply, FakeRequest, FakeStep, FakeTurn } from './types.js'
import type { WireFormat } from './wire.js'

const WIRES: readonly WireFormat[] = [openaiChat, openaiResponses, anthropicMessages]

/** The routes of the APIs served: `POST <path>` → its wire format. */
const routesOf = (apis: readonly FakeApi[] | undefined): ReadonlyMap<string, WireFormat> =>
  new Map(WIRES.filter((wire) => apis === undefined || apis.includes(wire.api)).map((wire) => [`POST ${wire.path}`, wire]))

type MutableRequest = { -readonly [K in keyof FakeRequest]: FakeRequest[K] }

/** Checks one turn, naming where it came from (`script[2]`, `the function of step 3`). */
export function checkTurn(turn: unknown, where: string): FakeTurn {
  return parseOptions(`fakeProvider() ${where}`, schemaOf(turn), turn) as FakeTurn
}

function checkStep(step: unknown, where: string): FakeStep {
  return typeof step === 'function' ? (step as FakeStep) : checkTurn(step, where)
}

function sendError(res: ServerResponse, wire: WireFormat | undefined, status: number, message: string): void {
  const body =
    wire?.api === 'anthropic-messages'
      ? {
          type: 'error',
          error: { type: status === 404 ? 'not_found_error' : status === 413 ? 'request_too_large' : 'api_error', message },
        }
      : { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: null } }
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

/** The script as it plays: its steps (more may be added), how many were played, what a request past the end gets. */
interface Script {
  readonly steps: FakeStep[]
  played: number
  readonly onEnd: 'fail' | 'repeat'
}

/** The turn that answers a request: the next step of the script, or a message saying why there is none. */
async function nextTurn(script: Script, entry: MutableRequest): Promise<FakeTurn | string> {
  const { steps, onEnd } = script
  if (script.played >= steps.length && (onEnd === 'fail' || steps.length === 0)) {
    return `fakeProvider: the script has ${steps.length} steps and request ${entry.index} (${entry.method} ${entry.path}) asked for step ${script.played + 1}`
  }
  const stepNumber = Math.min(script.played, steps.length - 1) + 1
  script.played++
  entry.turn = stepNumber
  const step = steps[stepNumber - 1] as FakeStep
  if (typeof step !== 'function') return step
  try {
    return checkTurn(await step(entry), `the function of step ${stepNumber}`)
  } catch (error) {
    return `fakeProvider: step ${stepNumber} threw: ${error instanceof Error ? error.message : String(error)}`
  }
}

/** A request's body as text (empty past `maxBodyBytes`), its size, and the JSON it holds. */
async function readBody(req: IncomingMessage, maxBodyBytes: number) {
  const chunks: Buffer[] = []
  let size = 0
  let tooLarge = false
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > maxBodyBytes) tooLarge = true
    else chunks.push(chunk)
  }
  const text = tooLarge ? '' : Buffer.concat(chunks).toString('utf8')
  let body: unknown
  let parseFailed = false
  try {
    body = text.length === 0 ? undefined : JSON.parse(text)
  } catch {
    parseFailed = true
  }
  return { text, size, tooLarge, body, parseFailed }
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value
  return headers
}

function listenLocally(server: Server): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
}

/** Where and when a request arrived: its place in the log, its route, and the provider's and the wall clock's time. */
interface Arrival {
  readonly index: number
  readonly wire: WireFormat | undefined
  readonly path: string
  readonly at: number
  readonly receivedAt: number
}

/** The record of a request as it arrived, before the script answers it. */
function entryOf(req: IncomingMessage, { index, wire, path, at, receivedAt }: Arrival, body: unknown): MutableRequest {
  const api = wire?.api
  return {
    index,
    api,
    method: req.method ?? 'GET',
    path,
    headers: headersOf(req),
    body,
    stream: typeof body === 'object' && body !== null && (body as { stream?: unknown }).stream === true,
    at,
    receivedAt,
    turn: undefined,
    outcome: 'pending',
    ...viewOf(api, body),
  }
}

/** Why a request is refused before the script plays (no route, too large, not a JSON object), or undefined. */
function refusalOf(
  wire: WireFormat | undefined,
  entry: MutableRequest,
  read: { size: number; tooLarge: boolean; body: unknown; parseFailed: boolean },
  served: { routes: ReadonlyMap<string, WireFormat>; maxBodyBytes: number },
): { status: number; message: string } | undefined {
  const { routes: servedRoutes, maxBodyBytes } = served
  if (wire === undefined) {
    const routes = [...servedRoutes.keys()].join(', ')
    return { status: 404, message: `fakeProvider: no route for ${entry.method} ${entry.path}; it serves ${routes}` }
  }
  if (read.tooLarge)
    return { status: 413, message: `fakeProvider: the body has ${read.size} bytes, more than maxBodyBytes (${maxBodyBytes})` }
  const { body } = read
  if (read.parseFailed || typeof body !== 'object' || body === null || Array.isArray(body))
    return { status: 400, message: 'We could not parse the JSON body of your request: it must be a JSON object.' }
  return undefined
}

type ArrivalWaiters = Map<number, Array<{ resolve: (r: FakeRequest) => void; reject: (e: Error) => void }>>

/** Request `index` once it has arrived; rejected if the provider closes first. */
function arrival(
  requests: readonly FakeRequest[],
  waiting: ArrivalWaiters,
  closing: Promise<void> | undefined,
  index: number,
): Promise<FakeRequest> {
  const arrived = requests[index]
  if (arrived !== undefined) return Promise.resolve(arrived)
  if (closing) return Promise.reject(new Error(`fakeProvider: closed before request ${index} arrived`))
  return new Promise<FakeRequest>((resolve, reject) => {
    const waiters = waiting.get(index) ?? []
    waiters.push({ resolve, reject })
    waiting.set(index, waiters)
  })
}

/**
 * A local HTTP server (127.0.0.1, an ephemeral port) that speaks OpenAI Chat Completions, OpenAI
 * Responses and Anthropic Messages, as JSON and as SSE streams. It plays a script of turns (text,
 * tool calls, faults at the HTTP level), one per request, and records every request with its arrival
 * time, so a test drives a real provider SDK and asserts what was sent and when.
 *
 * @example
 * const provider = await fakeProvider({ script: [{ fault: 'rate_limit', retryAfterSeconds: 1 }, { text: 'hello' }] })
 * const openai = createOpenAI({ baseURL: provider.openaiBaseURL, apiKey: 'sk-fake' })
 * // … generateText({ model: openai.chat('gpt-4o-mini'), prompt: 'hi', maxRetries: 0 }) rejects with a 429, then says 'hello'
 * await provider.close()
 */
export async function fakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const parsed = parseOptions('fakeProvider()', optionsSchema, options)
  const now = (parsed.now as (() => number) | undefined) ?? Date.now
  const onEnd = parsed.onEnd ?? 'fail'
  const maxBodyBytes = parsed.maxBodyBytes ?? 8 * 1024 * 1024
  const routes = routesOf(parsed.apis)
  const steps: FakeStep[] = (parsed.script ?? []).map((step, i) => checkStep(step, `option script[${i}]`))
  const script: Script = { steps, played: 0, onEnd }
  const requests: MutableRequest[] = []
  const sockets = new Set<Socket>()
  const inFlight = inFlightResponses()
  const arrivalWaiters: ArrivalWaiters = new Map()
  let closing: Promise<void> | undefined

  const settle = (record: MutableRequest, outcome: FakeOutcome) => {
    if (record.outcome === 'pending') record.outcome = outcome
  }

  const record = (entry: MutableRequest) => {
    requests.push(entry)
    const waiters = arrivalWaiters.get(entry.index)
    arrivalWaiters.delete(entry.index)
    for (const waiter of waiters ?? []) waiter.resolve(entry)
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = now()
    const receivedAt = Date.now()
    const path = (req.url ?? '/').split('?')[0] as string
    const wire = routes.get(`${req.method} ${path}`)
    const read = await readBody(req, maxBodyBytes)
    const { text, body } = read
    const entry = entryOf(req, { index: requests.length, wire, path, at, receivedAt }, body)
    record(entry)
    res.on('close', () => {
      settle(entry, closing ? 'closed_by_server' : 'client_closed')
      inFlight.leave(res)
    })
    const refused = refusalOf(wire, entry, read, { routes, maxBodyBytes })
    if (refused !== undefined) {
      entry.outcome = 'rejected'
      return sendError(res, wire, refused.status, refused.message)
    }
    // refusalOf refuses a request with no route.
    const served = wire as WireFormat
    const turn = await nextTurn(script, entry)
    if (res.destroyed) return
    if (typeof turn === 'string') {
      entry.outcome = 'faulted'
      return sendError(res, served, 500, turn)
    }
    const reply = (r: FakeReply) => planReply(r, served, entry, text)
    await play({ turn, wire: served, entry, res, reply })
  }

  const server = createServer((req, res) => {
    inFlight.add(res)
    handle(req, res).catch((error: unknown) => {
      // A socket torn down mid-write lands here; anything else is a bug worth a loud 500.
      if (!res.headersSent && !res.destroyed)
        sendError(res, undefined, 500, `fakeProvider: ${error instanceof Error ? error.message : String(error)}`)
      else res.destroy()
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await listenLocally(server)
  const { port } = server.address() as AddressInfo
  const url = `http://127.0.0.1:${port}`

  return {
    url,
    openaiBaseURL: `${url}/v1`,
    anthropicBaseURL: `${url}/v1`,
    requests,
    get remaining() {
      return Math.max(0, steps.length - script.played)
    },
    get listening() {
      return server.listening
    },
    get openSockets() {
      return sockets.size
    },
    script(...more: FakeStep[]) {
      const from = steps.length
      steps.push(...more.map((step, i) => checkStep(step, `script() step ${from + i + 1}`)))
    },
    waitForRequest(index: number) {
      if (!Number.isSafeInteger(index) || index < 0) {
        return Promise.reject(new TypeError(`fakeProvider.waitForRequest(): index must be a whole number >= 0 (got ${String(index)})`))
      }
      return arrival(requests, arrivalWaiters, closing, index)
    },
    whenIdle: inFlight.whenIdle,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const socket of sockets) socket.destroy()
        for (const [index, waiters] of arrivalWaiters)
          for (const w of waiters) w.reject(new Error(`fakeProvider: closed before request ${index} arrived`))
        arrivalWaiters.clear()
      })
      return closing
    },
  }
}
