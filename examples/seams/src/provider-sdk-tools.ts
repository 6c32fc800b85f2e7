import { createOpenAI } from '@ai-sdk/openai'
import Anthropic from '@anthropic-ai/sdk'
import { generateText } from 'ai'
import OpenAI from 'openai'
import { type Clock, createStack, defaultMiddleware, defineTool, systemClock } from 'shallot'
import { z } from 'zod'

/**
 * Tools that call the OpenAI, Anthropic and AI SDKs under the default stack. Each client has its own
 * retries off (`maxRetries: 0`), so shallot's retry is the one policy, and each passes on the call's
 * `signal`, so shallot's deadline ends the request. Keys and base URLs come from the usual
 * environment variables (OPENAI_API_KEY, ANTHROPIC_API_KEY, …); `clock` is for tests (a manual clock).
 */
export function supportStack(send: (ticket: string, text: string) => Promise<void>, clock: Clock = systemClock) {
  const openai = new OpenAI({ maxRetries: 0 })
  const anthropic = new Anthropic({ maxRetries: 0 })
  const provider = createOpenAI()

  const summarise = defineTool({
    name: 'summarise',
    description: 'Summarise a text in one sentence',
    input: z.object({ text: z.string() }),
    effect: 'read',
    execute: async ({ text }, { signal }) => {
      const reply = await openai.chat.completions.create(
        { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Summarise in one sentence: ${text}` }] },
        { signal },
      )
      return reply.choices[0]?.message.content ?? ''
    },
  })

  // A write: the reply is sent. A 429 from Anthropic comes before anything is sent, so shallot may repeat it.
  const replyToTicket = defineTool({
    name: 'reply_to_ticket',
    description: 'Write a reply to a support ticket and send it',
    input: z.object({ ticket: z.string(), question: z.string() }),
    effect: 'write',
    execute: async ({ ticket, question }, { signal }) => {
      const reply = await anthropic.messages.create(
        { model: 'claude-sonnet-4-5', max_tokens: 512, messages: [{ role: 'user', content: `Answer this customer: ${question}` }] },
        { signal },
      )
      const text = reply.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
      await send(ticket, text)
      return { sent: true }
    },
  })

  const classifyTicket = defineTool({
    name: 'classify_ticket',
    description: 'Label a ticket as billing, bug or question',
    input: z.object({ text: z.string() }),
    effect: 'read',
    execute: async ({ text }, { signal }) => {
      const { text: label } = await generateText({
        model: provider.chat('gpt-4o-mini'),
        prompt: `Label as billing, bug or question: ${text}`,
        maxRetries: 0,
        abortSignal: signal,
      })
      return label.trim()
    },
  })

  return createStack({ middleware: defaultMiddleware(), tools: [summarise, replyToTicket, classifyTicket], clock })
}
