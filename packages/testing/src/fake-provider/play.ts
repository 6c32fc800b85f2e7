import type { ServerResponse } from 'node:http'
import type { FakeReply, FakeRequest, FakeTurn } from './types.js'
import type { PlannedReply, SseEvent, WireFormat } from './wire.js'

type Outcome = { -readonly [K in 'outcome']: FakeRequest[K] }

export interface PlayContext {
  readonly turn: FakeTurn
  readonly wire: WireFormat
  readonly entry: Outcome & { readonly stream: boolean }
  readonly res: ServerResponse
  readonly reply: (reply: FakeReply) => PlannedReply
}

const CUT_SHORT: FakeReply = { text: 'This answer is cut short by the fake provider before it ends.' }

const frame = (event: SseEvent) =>
  `${event.event === undefined ? '' : `event: ${event.event}\n`}data: ${typeof event.data === 'string' ? event.data : JSON.stringify(event.data)}\n\n`

/** Resolves once the chunk reached the socket, so a reset that follows cannot swallow it. */
const write = (res: ServerResponse, chunk: string) =>
  new Promise<void>((resolve) => {
    if (res.destroyed) resolve()
    else res.write(chunk, () => resolve())
  })

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' }

function retryHeaders(turn: { retryAfterSeconds?: number; retryAfterMs?: number }): Record<string, string> {
  const headers: Record<string, string> = {}
  if (turn.retryAfterSeconds !== undefined) headers['retry-after'] = String(turn.retryAfterSeconds)
  if (turn.retryAfterMs !== undefined) headers['retry-after-ms'] = String(turn.retryAfterMs)
  return headers
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body ?? {})
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', ...headers }).end(text)
}

/** Sends a whole reply, as one JSON body or as the API's events. */
async function sendReply(context: PlayContext, planned: PlannedReply, headers: Readonly<Record<string, string>> = {}) {
  const { res, wire, entry } = context
  entry.outcome = 'replied'
  if (!entry.stream) return sendJson(res, 200, wire.json(planned), headers)
  res.writeHead(200, { ...SSE_HEADERS, ...headers })
  for (const event of wire.events(planned)) await write(res, frame(event))
  res.end()
}

/** Plays one turn on one response. Faults that never end leave the response open: the client or `close()` ends it. */
export async function play(context: PlayContext): Promise<void> {
  const { turn, wire, entry, res } = context
  if (!('fault' in turn)) return sendReply(context, context.reply(turn), turn.headers)
  switch (turn.fault) {
    case 'http':
      entry.outcome = 'faulted'
      return sendJson(res, turn.status, turn.body, turn.headers)
    case 'truncated': {
      const args = turn.toolCall.rawArgs ?? JSON.stringify(turn.toolCall.args ?? {})
      const cut = args.slice(0, Math.max(1, Math.floor(args.length / 2)))
      const planned = context.reply({
        ...(turn.text === undefined ? {} : { text: turn.text }),
        toolCalls: [{ ...(turn.toolCall.id === undefined ? {} : { id: turn.toolCall.id }), name: turn.toolCall.name, rawArgs: cut }],
        finishReason: 'length',
        ...(turn.usage === undefined ? {} : { usage: turn.usage }),
      })
      return sendReply(context, planned)
    }
    case 'reset':
      entry.outcome = 'faulted'
      res.socket?.destroy()
      return
    case 'hang':
      return
    case 'reset_mid_stream':
    case 'stall':
    case 'stream_error': {
      const planned = context.reply(turn.reply ?? CUT_SHORT)
      if (!entry.stream) {
        if (turn.fault === 'stream_error') {
          entry.outcome = 'faulted'
          return sendJson(
            res,
            500,
            wire.error('server_error', 'fakeProvider: a stream_error turn needs a streaming request (stream: true)').body,
          )
        }
        const body = JSON.stringify(wire.json(planned))
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) })
        await write(res, body.slice(0, Math.floor(body.length / 2)))
      } else {
        const events = wire.events(planned)
        const after = Math.min(turn.after ?? Math.ceil(events.length / 2), events.length)
        res.writeHead(200, SSE_HEADERS)
        res.flushHeaders()
        for (const event of events.slice(0, after)) await write(res, frame(event))
        if (turn.fault === 'stream_error') {
          entry.outcome = 'faulted'
          await write(res, frame(wire.streamError(turn.errorType, turn.message, after)))
          res.end()
          return
        }
      }
      if (turn.fault === 'reset_mid_stream') {
        entry.outcome = 'faulted'
        res.socket?.destroy()
      }
      return
    }
    default: {
      entry.outcome = 'faulted'
      const { status, body } = wire.error(turn.fault, turn.message)
      return sendJson(res, turn.status ?? status, body, { ...retryHeaders(turn), ...turn.headers })
    }
  }
}
