import type { Message, ModelCallRequest, ModelTool, ToolCall } from '@shallot/core'
import type { CallParams, Prompt } from './sdk-model-types.js'

// What the model layers see of an AI SDK call (shallot's messages, tools and system prompt), and the call the
// model is sent once a layer (context editing) replaced them. The prompt's own messages are kept wherever the
// layers kept a message, so what shallot has no word for (files, reasoning, provider options) goes through.

type Part = { readonly type: string; readonly [key: string]: unknown }
type Loose = { readonly role: string; readonly content: unknown; readonly [key: string]: unknown }

/** Where a message of the view came from: the prompt's message, and for a tool result its part. */
interface Origin {
  readonly index: number
  readonly part?: number
}

const origins = new WeakMap<Message, Origin>()

const partsOf = (message: Loose): Part[] => (Array.isArray(message.content) ? (message.content as Part[]) : [])

function textOf(parts: readonly Part[]): string {
  let text = ''
  for (const part of parts) if (part.type === 'text' && typeof part.text === 'string') text += part.text
  return text
}

const json = (value: unknown): string => JSON.stringify(value) ?? ''

/** A tool result's output as the text a layer counts and edits, and whether it says the call failed. */
function resultText(output: unknown): { content: string; ok: boolean } {
  const o = (typeof output === 'object' && output !== null ? output : {}) as { type?: unknown; value?: unknown; reason?: unknown }
  if (o.type === 'text' || o.type === 'error-text') return { content: String(o.value), ok: o.type === 'text' }
  if (o.type === 'json' || o.type === 'error-json') return { content: json(o.value), ok: o.type === 'json' }
  if (o.type === 'execution-denied') return { content: typeof o.reason === 'string' ? o.reason : 'denied', ok: false }
  if (o.type === 'content' && Array.isArray(o.value)) return { content: textOf(o.value as Part[]), ok: true }
  return { content: json(o.value), ok: true }
}

const isCall = (part: Part) => part.type === 'tool-call' && part.providerExecuted !== true

function messagesOf(prompt: Prompt): Message[] {
  const messages: Message[] = []
  const add = (message: Message, origin: Origin) => {
    origins.set(message, origin)
    messages.push(message)
  }
  for (const [index, raw] of prompt.entries()) {
    const message = raw as Loose
    const parts = partsOf(message)
    if (message.role === 'user') add({ role: 'user', content: textOf(parts) }, { index })
    else if (message.role === 'assistant') {
      const toolCalls: ToolCall[] = parts.filter(isCall).map((p) => ({ id: String(p.toolCallId), name: String(p.toolName), args: p.input }))
      const text = textOf(parts)
      add({ role: 'assistant', ...(text === '' ? {} : { content: text }), toolCalls }, { index })
    } else if (message.role === 'tool') {
      for (const [part, p] of parts.entries()) {
        if (p.type !== 'tool-result') continue
        add({ role: 'tool', callId: String(p.toolCallId), name: String(p.toolName), ...resultText(p.output) }, { index, part })
      }
    }
  }
  return messages
}

function toolsOf(params: CallParams): ModelTool[] {
  const tools = (params.tools ?? []) as unknown as Part[]
  return tools
    .filter((t) => t.type === 'function')
    .map((t) => ({
      name: String(t.name),
      description: typeof t.description === 'string' ? t.description : '',
      inputSchema: (t.inputSchema ?? {}) as Record<string, unknown>,
    }))
}

function systemOf(prompt: Prompt): string | undefined {
  const texts = prompt.flatMap((m) => ((m as Loose).role === 'system' ? [String((m as Loose).content)] : []))
  return texts.length === 0 ? undefined : texts.join('\n\n')
}

/**
 * The request the model layers see of a call, converted only when a layer reads it: a call that no layer
 * looks into (the default stack's) costs no conversion of a long conversation. Own getters, so a layer that
 * copies the request (`{ ...request, messages }`) copies them too.
 */
export function promptView(params: CallParams): ModelCallRequest {
  let messages: Message[] | undefined
  let tools: ModelTool[] | undefined
  return {
    get messages() {
      messages ??= messagesOf(params.prompt)
      return messages
    },
    get tools() {
      tools ??= toolsOf(params)
      return tools
    },
    get system() {
      return systemOf(params.prompt) as string
    },
  }
}

/** The call to send for `request`: `params` when no layer replaced their view, else the prompt rebuilt from its messages. */
export function paramsFor(params: CallParams, view: ModelCallRequest, request: ModelCallRequest): CallParams {
  if (request === view) return params
  const system = request.system === view.system ? undefined : request.system
  const prompt =
    request.messages === view.messages && system === undefined ? params.prompt : promptOf(params.prompt, view.messages, request, system)
  const tools = request.tools === view.tools ? params.tools : toolsFor(params, request.tools)
  return { ...params, prompt, ...(tools === undefined ? {} : { tools }) } as CallParams
}

/** A tool result as the layers left it: the prompt's part, with the layers' text when they changed it. */
function resultPart(prompt: Prompt, message: Extract<Message, { role: 'tool' }>, origin: Origin | undefined): Part {
  const original = origin?.part === undefined ? undefined : partsOf(prompt[origin.index] as Loose)[origin.part]
  if (original !== undefined && origins.get(message) === origin) return original
  const output = { type: message.ok ? 'text' : 'error-text', value: message.content }
  return original === undefined
    ? { type: 'tool-result', toolCallId: message.callId, toolName: message.name, output }
    : { ...original, output }
}

/** An assistant message as the layers left it: the prompt's, with only the tool calls they kept. */
function assistantMessage(prompt: Prompt, message: Extract<Message, { role: 'assistant' }>, origin: Origin | undefined): Loose {
  const original = origin === undefined ? undefined : (prompt[origin.index] as Loose)
  if (original !== undefined && origins.get(message) === origin) return original
  const kept = new Set(message.toolCalls.map((c) => c.id))
  if (original !== undefined) return { ...original, content: partsOf(original).filter((p) => !isCall(p) || kept.has(String(p.toolCallId))) }
  const text = message.content === undefined || message.content === '' ? [] : [{ type: 'text', text: message.content }]
  const calls = message.toolCalls.map((c) => ({ type: 'tool-call', toolCallId: c.id, toolName: c.name, input: c.args }))
  return { role: 'assistant', content: [...text, ...calls] }
}

/** Where a message the layers built anew came from: a tool result by its call, an assistant message by its calls. */
function originOf(message: Message, byCall: ReadonlyMap<string, Origin>, callers: ReadonlyMap<string, Origin>): Origin | undefined {
  const own = origins.get(message)
  if (own !== undefined) return own
  if (message.role === 'tool') return byCall.get(message.callId)
  if (message.role === 'assistant') return message.toolCalls.map((c) => callers.get(c.id)).find((o) => o !== undefined)
  return undefined
}

/** The prompt the layers' messages stand for; system messages keep their place unless a layer changed the system prompt. */
function promptOf(prompt: Prompt, seen: readonly Message[], request: ModelCallRequest, system: string | undefined): Prompt {
  const byCall = new Map<string, Origin>()
  const callers = new Map<string, Origin>()
  for (const message of seen) {
    const origin = origins.get(message) as Origin
    if (message.role === 'tool') byCall.set(message.callId, origin)
    if (message.role === 'assistant') for (const call of message.toolCalls) callers.set(call.id, origin)
  }
  const systems = system === undefined ? prompt.flatMap((m, index) => ((m as Loose).role === 'system' ? [index] : [])) : []
  const out: Loose[] = system === undefined ? [] : [{ role: 'system', content: system }]
  const built = new WeakSet<Loose>()
  const carriedFrom = new WeakSet<Loose>()
  const flushSystems = (before: number) => {
    while (systems.length > 0 && (systems[0] as number) < before) out.push(prompt[systems.shift() as number] as Loose)
  }
  for (const message of request.messages) {
    const origin = originOf(message, byCall, callers)
    if (origin !== undefined) flushSystems(origin.index)
    if (message.role === 'user') {
      const original = origin === undefined ? undefined : (prompt[origin.index] as Loose)
      out.push(original?.role === 'user' ? original : { role: 'user', content: [{ type: 'text', text: message.content }] })
    } else if (message.role === 'assistant') out.push(assistantMessage(prompt, message, origin))
    else {
      // Results of one turn travel in one tool message, as every provider expects after a multi-call turn.
      const last = out.at(-1)
      const group = last !== undefined && built.has(last) ? last : undefined
      const original = origin === undefined ? undefined : (prompt[origin.index] as Loose)
      // What else the prompt's tool message carried (approval answers) goes once, with its first result.
      const carried = original === undefined || carriedFrom.has(original) ? [] : partsOf(original).filter((p) => p.type !== 'tool-result')
      if (original !== undefined) carriedFrom.add(original)
      const parts = [...carried, resultPart(prompt, message, origin)]
      if (group !== undefined) (group.content as Part[]).push(...parts)
      else {
        const grouped: Loose = { ...original, role: 'tool', content: parts }
        built.add(grouped)
        out.push(grouped)
      }
    }
  }
  flushSystems(Number.POSITIVE_INFINITY)
  return out as unknown as Prompt
}

function toolsFor(params: CallParams, tools: readonly ModelTool[]): CallParams['tools'] {
  const given = (params.tools ?? []) as unknown as Part[]
  const byName = new Map(tools.map((t) => [t.name, t]))
  const kept = given.flatMap((t) => {
    if (t.type !== 'function') return [t]
    const edited = byName.get(String(t.name))
    if (edited === undefined) return []
    return [edited.description === t.description ? t : { ...t, description: edited.description }]
  })
  return kept as unknown as CallParams['tools']
}
