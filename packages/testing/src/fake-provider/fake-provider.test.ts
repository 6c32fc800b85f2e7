import { OptionsError } from '@shallot/core'
import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, type FakeStep, fakeProvider } from '../index.js'

// The server itself, with plain fetch: lifecycle, recording, scripting, hostile requests, and the faults
// that never end. Nothing here sleeps: a test waits for an event (a request recorded, a chunk read).

const open: FakeProvider[] = []
async function start(options?: Parameters<typeof fakeProvider>[0]) {
  const provider = await fakeProvider(options)
  open.push(provider)
  return provider
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((provider) => provider.close()))
})

const chat = (
  provider: FakeProvider,
  body: unknown = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
  init: RequestInit = {},
) =>
  fetch(`${provider.openaiBaseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-fake' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  })

/** The fields these tests read from Chat Completions bodies and error bodies. */
interface WireBody {
  choices: Array<{ message: { content: string }; delta: unknown }>
  error: { message: string; type: string }
  type?: string
}
const read = async (response: Response | Promise<Response>) => (await (await response).json()) as WireBody

/** The TCP handles this process holds: a closed provider must leave none behind. */
const tcpHandles = () => process.getActiveResourcesInfo().filter((kind) => kind.startsWith('TCP')).length

/** Lets pending socket closes run (I/O callbacks), without a timer. */
const ioTurns = async (n = 10) => {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve))
}

describe('fakeProvider: lifecycle', () => {
  it('listens on 127.0.0.1 on an ephemeral port and gives the base URLs the SDKs take', async () => {
    const provider = await start()
    expect(provider.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(provider.openaiBaseURL).toBe(`${provider.url}/v1`)
    expect(provider.anthropicBaseURL).toBe(`${provider.url}/v1`)
    expect(provider.listening).toBe(true)
  })

  it('close() ends a hung response, stops listening and leaves no socket or handle behind', async () => {
    await ioTurns() // earlier tests' client sockets finish closing first
    const before = tcpHandles()
    const provider = await fakeProvider({ script: [{ fault: 'hang' }] })
    expect(tcpHandles()).toBe(before + 1) // the listening server
    const hung = chat(provider).then(
      () => 'answered',
      (error: unknown) => (error as Error).name,
    )
    await provider.waitForRequest(0)
    expect(provider.openSockets).toBe(1)
    await provider.close()
    expect(await hung).toBe('TypeError') // fetch failed: the socket was destroyed
    expect(provider.requests[0]?.outcome).toBe('closed_by_server')
    expect(provider.listening).toBe(false)
    expect(provider.openSockets).toBe(0)
    await ioTurns()
    expect(tcpHandles()).toBe(before)
    await expect(provider.close()).resolves.toBeUndefined() // idempotent
  })

  it('a hung response ends when the client aborts: abort once the request is recorded', async () => {
    const provider = await start({ script: [{ fault: 'hang' }] })
    const controller = new AbortController()
    const pending = chat(provider, undefined, { signal: controller.signal })
    await provider.waitForRequest(0)
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
    await provider.whenIdle()
    expect(provider.requests[0]?.outcome).toBe('client_closed')
  })

  it('a stalled stream sends its first events, then nothing until the client gives up', async () => {
    const provider = await start({ script: [{ fault: 'stall', reply: { text: 'one two three' }, after: 2 }] })
    const controller = new AbortController()
    const response = await chat(provider, { model: 'm', messages: [], stream: true }, { signal: controller.signal })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    let text = ''
    while ((text.match(/\n\n/g) ?? []).length < 2) text += new TextDecoder().decode((await reader.read()).value)
    const events = text
      .trim()
      .split('\n\n')
      .map((frame) => JSON.parse(frame.replace(/^data: /, '')))
    expect(events.map((e) => e.choices[0]?.delta)).toEqual([{ role: 'assistant', content: '', refusal: null }, { content: 'one ' }])
    controller.abort()
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' })
    await provider.whenIdle()
    expect(provider.requests[0]?.outcome).toBe('client_closed')
  })

  it('waitForRequest rejects when the provider closes before the request arrives', async () => {
    const provider = await fakeProvider()
    const waiting = provider.waitForRequest(0)
    await provider.close()
    await expect(waiting).rejects.toThrow('fakeProvider: closed before request 0 arrived')
    await expect(provider.waitForRequest(3)).rejects.toThrow('closed before request 3')
  })
})

describe('fakeProvider: scripting and recording', () => {
  it('records method, path, lower-cased headers, the parsed body and both arrival times', async () => {
    let now = 1_000
    const provider = await start({ now: () => now, script: [{ text: 'a' }, { text: 'b' }] })
    const before = Date.now()
    await chat(provider, {
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'x' },
      ],
    })
    now = 4_500
    await chat(provider)
    const [first, second] = provider.requests
    expect(first).toMatchObject({
      index: 0,
      method: 'POST',
      path: '/v1/chat/completions',
      at: 1_000,
      turn: 1,
      model: 'gpt-4o',
      system: 'Be brief.',
    })
    expect(first?.headers).toMatchObject({ authorization: 'Bearer sk-fake', 'content-type': 'application/json' })
    expect(first?.body).toEqual({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'x' },
      ],
    })
    expect(second).toMatchObject({ index: 1, at: 4_500, turn: 2 })
    expect(first?.receivedAt).toBeGreaterThanOrEqual(before)
  })

  it('plays steps in order, appends with script(), and says when the script ran out', async () => {
    const provider = await start({ script: [{ text: 'first' }] })
    provider.script({ text: 'second' })
    expect(provider.remaining).toBe(2)
    expect((await read(chat(provider))).choices[0]?.message.content).toBe('first')
    expect((await read(chat(provider))).choices[0]?.message.content).toBe('second')
    const third = await chat(provider)
    expect(third.status).toBe(500)
    expect((await read(third)).error.message).toBe(
      'fakeProvider: the script has 2 steps and request 2 (POST /v1/chat/completions) asked for step 3',
    )
    expect(provider.requests[2]).toMatchObject({ outcome: 'faulted', turn: undefined })
  })

  it("onEnd: 'repeat' plays the last step again", async () => {
    const provider = await start({ onEnd: 'repeat', script: [{ text: 'again' }] })
    for (let i = 0; i < 3; i++) expect((await read(chat(provider))).choices[0]?.message.content).toBe('again')
    expect(provider.requests.map((r) => r.turn)).toEqual([1, 1, 1])
  })

  it('a function step sees the request, and its result is checked like any turn', async () => {
    const seen: unknown[] = []
    const steps: FakeStep[] = [
      (request) => {
        seen.push(request.body)
        return { text: `you said ${request.stream ? 'stream' : 'json'}` }
      },
      () => ({ txt: 'typo' }) as never,
      () => {
        throw new Error('the test asserted something false')
      },
    ]
    const provider = await start({ script: steps })
    expect((await read(chat(provider))).choices[0]?.message.content).toBe('you said json')
    expect(seen).toEqual([provider.requests[0]?.body])
    const bad = await chat(provider)
    expect(bad.status).toBe(500)
    expect((await read(bad)).error.message).toMatch(/^fakeProvider: step 2 threw: fakeProvider\(\) the function of step 2: .*txt/)
    expect((await read(chat(provider))).error.message).toBe('fakeProvider: step 3 threw: the test asserted something false')
  })

  it('answers concurrent requests with distinct steps', async () => {
    const provider = await start({ script: [{ text: 'a' }, { text: 'b' }, { text: 'c' }] })
    const texts = await Promise.all([1, 2, 3].map(async () => (await read(chat(provider))).choices[0]?.message.content))
    expect([...texts].sort()).toEqual(['a', 'b', 'c'])
  })

  it('sends retry-after and retry-after-ms as given, and extra headers on replies', async () => {
    const provider = await start({
      script: [
        { fault: 'rate_limit', retryAfterSeconds: 1.5, retryAfterMs: 1500 },
        { text: 'ok', headers: { 'x-request-id': 'req_1' } },
      ],
    })
    const limited = await chat(provider)
    expect([limited.status, limited.headers.get('retry-after'), limited.headers.get('retry-after-ms')]).toEqual([429, '1.5', '1500'])
    expect((await chat(provider)).headers.get('x-request-id')).toBe('req_1')
  })

  it("a raw 'http' turn sends any status and body verbatim (a proxy's HTML 502, say)", async () => {
    const provider = await start({
      script: [{ fault: 'http', status: 502, body: '<html>Bad Gateway</html>', headers: { 'retry-after': '3' } }],
    })
    const response = await chat(provider)
    expect([response.status, response.headers.get('retry-after'), await response.text()]).toEqual([502, '3', '<html>Bad Gateway</html>'])
  })

  it('a JSON reply reset mid-body delivers headers and half the body, then the connection drops', async () => {
    const provider = await start({ script: [{ fault: 'reset_mid_stream', reply: { text: 'x'.repeat(200) } }] })
    const response = await chat(provider)
    expect(response.status).toBe(200)
    await expect(response.text()).rejects.toMatchObject({ name: 'TypeError', message: 'terminated' })
  })
})

describe('fakeProvider: hostile requests and options', () => {
  it('refuses an unknown path with 404, recorded as rejected, without spending a step', async () => {
    const provider = await start({ script: [{ text: 'kept' }] })
    const response = await fetch(`${provider.url}/v1/completions`, { method: 'POST', body: '{}' })
    expect(response.status).toBe(404)
    expect((await read(response)).error.message).toMatch(
      /^fakeProvider: no route for POST \/v1\/completions; it serves POST \/v1\/chat\/completions/,
    )
    expect(provider.requests[0]).toMatchObject({ api: undefined, outcome: 'rejected', turn: undefined })
    expect((await read(chat(provider))).choices[0]?.message.content).toBe('kept')
  })

  it('serves only the APIs it is given: a Chat-Completions-only server answers /v1/responses with 404, as vLLM does', async () => {
    const provider = await start({ apis: ['openai-chat'], script: [{ text: 'kept' }] })
    const response = await fetch(`${provider.url}/v1/responses`, { method: 'POST', body: '{"model":"gpt-4o-mini","input":"hi"}' })
    expect(response.status).toBe(404)
    expect((await read(response)).error.message).toBe('fakeProvider: no route for POST /v1/responses; it serves POST /v1/chat/completions')
    expect((await read(chat(provider))).choices[0]?.message.content).toBe('kept')
    await expect(start({ apis: [] })).rejects.toThrow(/apis/)
  })

  it('refuses a body that is not a JSON object with 400, in the API own error shape', async () => {
    const provider = await start({ script: [{ text: 'kept' }] })
    for (const body of ['{"model": ', '[1, 2]', '42', '']) {
      const response = await chat(provider, body)
      expect(response.status).toBe(400)
      expect((await read(response)).error.type).toBe('invalid_request_error')
    }
    const anthropic = await fetch(`${provider.anthropicBaseURL}/messages`, { method: 'POST', body: 'nope' })
    expect(await read(anthropic)).toMatchObject({ type: 'error', error: { type: 'api_error' } })
    expect(provider.remaining).toBe(1)
  })

  it('refuses a body over maxBodyBytes with 413', async () => {
    const provider = await start({ maxBodyBytes: 1024, script: [{ text: 'never' }] })
    const response = await chat(provider, { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(5000) }] })
    expect(response.status).toBe(413)
    expect(provider.requests[0]).toMatchObject({ outcome: 'rejected', body: undefined })
  })

  it('records a body with __proto__ as data, polluting nothing', async () => {
    const provider = await start({ script: [{ text: 'ok' }] })
    await chat(provider, '{"model":"m","messages":[],"__proto__":{"polluted":true}}')
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
    expect(Object.hasOwn(provider.requests[0]?.body as object, '__proto__')).toBe(true)
  })

  it('refuses bad options and bad turns with an OptionsError naming them', async () => {
    await expect(fakeProvider({ onEnd: 'never' as never })).rejects.toBeInstanceOf(OptionsError)
    await expect(fakeProvider({ onEnd: 'never' as never })).rejects.toThrow(/option onEnd/)
    await expect(fakeProvider({ maxBodyBytes: Number.NaN })).rejects.toThrow(/option maxBodyBytes.*NaN/)
    await expect(fakeProvider({ surely: 1 } as never)).rejects.toThrow(/surely/)
    await expect(fakeProvider({ script: [{ fault: 'rate_limit', retryAfterSeconds: -1 }] })).rejects.toThrow(
      /fakeProvider\(\) option script\[0\]: option retryAfterSeconds/,
    )
    await expect(fakeProvider({ script: [{ fault: 'meltdown' } as never] })).rejects.toThrow(/script\[0\]: option fault/)
    await expect(fakeProvider({ script: [{ toolCalls: [{ name: 'x', args: {}, rawArgs: '{' }] }] })).rejects.toThrow(/args or rawArgs/)
    const provider = await start()
    expect(() => provider.script({ text: 'ok' }, { text: 42 } as never)).toThrow(/script\(\) step 2: option text/)
    expect(provider.remaining).toBe(0)
  })
})
