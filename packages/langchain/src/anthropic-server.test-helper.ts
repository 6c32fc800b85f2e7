import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One content block the fixture answers with. */
export type Block = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }

/** What the fixture does with one `POST /v1/messages`. */
export type Reply =
  | { reply: 'message'; content: Block[] }
  | { reply: 'error'; status: number; type: string; headers?: Record<string, string> }
  /** Sends the stream's first event, then nothing, ever (the socket stays open until the client gives up). */
  | { reply: 'stall' }

export interface AnthropicServer {
  readonly url: string
  /** Every request body, parsed, in order. */
  readonly requests: Array<Record<string, unknown>>
  /** Requests whose client went away before an answer (aborted by the caller). */
  readonly abandoned: number
  close(): Promise<void>
}

const usage = { input_tokens: 10, output_tokens: 5 }

function message(content: Block[]) {
  const toolUse = content.some((block) => block.type === 'tool_use')
  return {
    id: `msg_${Math.random().toString(36).slice(2)}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content,
    stop_reason: toolUse ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage,
  }
}

function sse(res: ServerResponse, event: string, data: unknown) {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
}

function stream(res: ServerResponse, content: Block[]) {
  const whole = message(content)
  res.writeHead(200, { 'content-type': 'text/event-stream' })
  sse(res, 'message_start', { type: 'message_start', message: { ...whole, content: [], stop_reason: null } })
  content.forEach((block, index) => {
    if (block.type === 'text') {
      sse(res, 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } })
      sse(res, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } })
    } else {
      sse(res, 'content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } })
      sse(res, 'content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
      })
    }
    sse(res, 'content_block_stop', { type: 'content_block_stop', index })
  })
  sse(res, 'message_delta', {
    type: 'message_delta',
    delta: { stop_reason: whole.stop_reason, stop_sequence: null },
    usage: { output_tokens: 5 },
  })
  sse(res, 'message_stop', { type: 'message_stop' })
  res.end()
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const parts: Buffer[] = []
  for await (const part of req) parts.push(part as Buffer)
  return JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>
}

/**
 * A local HTTP server on 127.0.0.1 that speaks the Anthropic Messages wire format (JSON and SSE), so
 * the real `@langchain/anthropic` and `@anthropic-ai/sdk` are tested end to end. Each request takes the
 * next reply of the script, which may look at the request body.
 */
export async function anthropicServer(script: Array<Reply | ((request: Record<string, unknown>) => Reply)>): Promise<AnthropicServer> {
  const requests: Array<Record<string, unknown>> = []
  const open = new Set<ServerResponse>()
  let abandoned = 0
  const server = createServer(async (req, res) => {
    const request = await body(req)
    requests.push(request)
    const step = script[requests.length - 1]
    const reply = typeof step === 'function' ? step(request) : step
    open.add(res)
    res.on('close', () => {
      open.delete(res)
      if (!res.writableEnded) abandoned++
    })
    if (reply === undefined) {
      res.writeHead(500, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: `no step ${requests.length} in the script` } }))
    } else if (reply.reply === 'error') {
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers })
      res.end(JSON.stringify({ type: 'error', error: { type: reply.type, message: `${reply.type} (fixture)` } }))
    } else if (reply.reply === 'stall') {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      sse(res, 'message_start', { type: 'message_start', message: { ...message([]), stop_reason: null } })
    } else if (request.stream === true) {
      stream(res, reply.content)
    } else {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(message(reply.content)))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get abandoned() {
      return abandoned
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy()
        server.close(() => resolve())
        server.closeAllConnections() // keep-alive sockets would hold close() for seconds
      }),
  }
}
