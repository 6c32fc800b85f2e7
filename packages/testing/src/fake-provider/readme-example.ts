import { createAnthropic } from '@ai-sdk/anthropic'
import { generateText, stepCountIs, tool } from 'ai'
import { z } from 'zod'
import { fakeProvider } from '../index.js'

/** The real Anthropic provider against the fake server: a tool call, then an answer built from the tool result it was sent. */
export async function explainMain() {
  const provider = await fakeProvider({
    script: [
      { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] },
      (request) => ({ text: `main.rs holds ${request.toolResults[0]?.content}` }),
    ],
  })
  try {
    const anthropic = createAnthropic({ baseURL: provider.anthropicBaseURL, apiKey: 'sk-ant-fake' })
    const readFile = tool({
      description: 'Read a file',
      inputSchema: z.object({ path: z.string() }),
      execute: async ({ path }) => (path === 'src/main.rs' ? 'fn main() {}' : 'no such file'),
    })
    const { text } = await generateText({
      model: anthropic('claude-sonnet-4-5'),
      prompt: 'What is in src/main.rs?',
      tools: { read_file: readFile },
      stopWhen: stepCountIs(3),
      maxRetries: 0, // one retry policy: yours, not the SDK's
    })
    return { text, sent: provider.requests.map((r) => r.toolResults) }
  } finally {
    await provider.close()
  }
}
