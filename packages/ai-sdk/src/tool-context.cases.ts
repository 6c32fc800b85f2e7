import { generateText, stepCountIs, tool } from 'ai'
import { expect, it } from 'vitest'
import { z } from 'zod'
import { shallotTools } from './index.js'
import { scriptedLanguageModel } from './scripted-language-model.test-helper.js'

// Shared by ai 6 (tool-context.test.ts) and ai 7 (tool-context.node22.test.ts): the SDK's per-call
// context is `experimental_context` in ai 6 and `context` (from `toolsContext`) in ai 7.

it("the SDK's context, call id and messages reach the original execute through the stack", async () => {
  const seen: Array<{ context: unknown; toolCallId: string; messages: number; aborted: boolean | undefined }> = []
  const whoami = tool({
    description: 'Who is asking',
    inputSchema: z.object({}),
    execute: async (_input, options) => {
      const o = options as typeof options & { experimental_context?: unknown; context?: unknown }
      seen.push({
        context: o.experimental_context ?? o.context,
        toolCallId: o.toolCallId,
        messages: o.messages.length,
        aborted: o.abortSignal?.aborted,
      })
      return 'you'
    },
  })
  const shallot = shallotTools({ whoami })
  const user = { tenant: 'acme' }
  await generateText({
    model: scriptedLanguageModel([{ toolCalls: [{ name: 'whoami', input: {}, id: 'call_7' }] }, { text: 'done' }]),
    prompt: 'who am I?',
    tools: shallot.tools,
    stopWhen: stepCountIs(3),
    ...({ experimental_context: user, toolsContext: { whoami: user } } as object),
  })
  expect(seen).toEqual([{ context: user, toolCallId: 'call_7', messages: 1, aborted: false }])
})
