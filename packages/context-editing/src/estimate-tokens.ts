import type { Message, ModelCallRequest, ModelTool } from '@shallot/core'

/**
 * Tokens a message costs beyond its text: the role and the separators every chat format adds (OpenAI's
 * cookbook counts 3-4 per message). A constant, so an empty message still counts.
 */
export const TOKENS_PER_MESSAGE = 4

/** What a count is made of, per object: its characters, cached by the object (transcript messages never change). */
const charsByObject = new WeakMap<object, number>()

const textLength = (value: unknown): number => (typeof value === 'string' ? value.length : 0)

/** `JSON.stringify(value).length`, or 0 for a value JSON cannot hold (a cycle, a BigInt): it is estimated, not sent. */
function jsonLength(value: unknown): number {
  try {
    return textLength(JSON.stringify(value))
  } catch {
    return 0
  }
}

/** The characters of one message: its text, each tool call's name and JSON arguments, a result's tool name. */
export function messageChars(message: Message): number {
  if (typeof message !== 'object' || message === null) return 0
  const cached = charsByObject.get(message)
  if (cached !== undefined) return cached
  let chars = textLength(message.content)
  if (message.role === 'assistant' && Array.isArray(message.toolCalls)) {
    for (const call of message.toolCalls) chars += textLength(call?.name) + textLength(call?.id) + jsonLength(call?.args)
  } else if (message.role === 'tool') {
    chars += textLength(message.name) + textLength(message.callId)
  }
  charsByObject.set(message, chars)
  return chars
}

/** What was counted of a transcript array the last time: an agent's transcript only grows, so the next count adds its new messages. */
interface Counted {
  count: number
  chars: number
  /** The last message counted: if it is no longer at its place, the array was edited and is counted again. */
  last: Message | undefined
}
const countedArrays = new WeakMap<readonly Message[], Counted>()

function transcriptChars(messages: readonly Message[]): number {
  let counted = countedArrays.get(messages)
  if (counted === undefined || counted.count > messages.length || messages[counted.count - 1] !== counted.last) {
    counted = { count: 0, chars: 0, last: undefined }
    countedArrays.set(messages, counted)
  }
  for (let i = counted.count; i < messages.length; i++) counted.chars += messageChars(messages[i] as Message)
  counted.count = messages.length
  counted.last = messages[messages.length - 1]
  return counted.chars
}

/**
 * A tool's characters. The agent builds its tool list afresh for every request (a layer's note may change) but keeps
 * each tool's JSON schema object, so the schema's length is what is cached, by that object.
 */
function toolChars(tool: ModelTool): number {
  if (typeof tool !== 'object' || tool === null) return 0
  const schema: unknown = tool.inputSchema
  let schemaChars = typeof schema === 'object' && schema !== null ? charsByObject.get(schema) : undefined
  if (schemaChars === undefined) {
    schemaChars = jsonLength(schema)
    if (typeof schema === 'object' && schema !== null) charsByObject.set(schema, schemaChars)
  }
  return textLength(tool.name) + textLength(tool.description) + schemaChars
}

/**
 * The built-in estimate of a request's input tokens: every character the provider is sent (message
 * text, tool calls' names and JSON arguments, the system prompt, each tool's name, description and
 * JSON schema) divided by `charsPerToken` (4: English text in the GPT and Claude tokenizers; code and
 * non-Latin scripts run denser, so lower it for those), plus {@link TOKENS_PER_MESSAGE} per message.
 * Each message's and tool's characters are counted once and cached by the object, and a transcript
 * array's total by the array (an agent's transcript only grows), so a long run pays only for its new
 * messages.
 */
export function estimateTokens(request: ModelCallRequest, charsPerToken = 4): number {
  let chars = textLength(request.system)
  const messages = Array.isArray(request.messages) ? request.messages : []
  chars += transcriptChars(messages)
  if (Array.isArray(request.tools)) for (const tool of request.tools) chars += toolChars(tool)
  return Math.ceil(chars / charsPerToken) + TOKENS_PER_MESSAGE * messages.length
}
