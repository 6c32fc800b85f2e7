import { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { type AIMessage, AIMessageChunk, type BaseMessage, ToolMessage } from '@langchain/core/messages'
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs'

/** One model turn: a whole message (as an invoke-style provider answers) or the chunks of a stream. */
export type ScriptedReply = AIMessage | AIMessageChunk[]

/**
 * A real `BaseChatModel` that answers from a script, each step seeing the conversation so far. It
 * implements both `_generate` and `_streamResponseChunks`, so `agent.invoke()` gets whole messages and
 * `agent.stream(…, { streamMode: 'messages' })` gets the chunks, aggregated by LangChain itself.
 */
export class ScriptedChatModel extends BaseChatModel {
  readonly seen: BaseMessage[][] = []
  readonly #steps: Array<(messages: BaseMessage[]) => ScriptedReply>

  constructor(steps: Array<ScriptedReply | ((messages: BaseMessage[]) => ScriptedReply)>) {
    super({})
    this.#steps = steps.map((step) => (typeof step === 'function' ? step : () => step))
  }

  _llmType(): string {
    return 'scripted'
  }

  override bindTools(): this {
    return this
  }

  #next(messages: BaseMessage[]): ScriptedReply {
    this.seen.push(messages)
    const step = this.#steps[this.seen.length - 1]
    if (step === undefined) throw new Error(`ScriptedChatModel: no step ${this.seen.length} in the script`)
    return step(messages)
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const reply = this.#next(messages)
    const message = Array.isArray(reply) ? (reply.reduce((a, b) => a.concat(b)) as AIMessage) : reply
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] }
  }

  override async *_streamResponseChunks(messages: BaseMessage[]): AsyncGenerator<ChatGenerationChunk> {
    const reply = this.#next(messages)
    const chunks = Array.isArray(reply) ? reply : [new AIMessageChunk({ content: reply.content, tool_calls: reply.tool_calls ?? [] })]
    for (const message of chunks)
      yield new ChatGenerationChunk({ text: typeof message.content === 'string' ? message.content : '', message })
  }
}

/** The tool results of a conversation. */
export const toolMessages = (messages: readonly BaseMessage[]) => messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m))
