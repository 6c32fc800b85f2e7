import { AIMessage } from '@langchain/core/messages'
import { fakeModel } from '@langchain/core/testing'
import { createAgent } from '@shallot/agent'
import { shallotTools, toShallotTools } from '@shallot/ai-sdk'
import { createStack, defineTool, LoopError } from '@shallot/core'
import { loopErrorOf, shallotMiddleware, toShallotTool } from '@shallot/langchain'
import { scriptedModel } from '@shallot/testing'
import { generateText, tool as sdkTool, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { createAgent as createLangChainAgent, tool as langChainTool } from 'langchain'
import { describe, expect, it } from 'vitest'
import { deleteRepo, expectedChannel } from './denied-tool.js'

const args = { repo: 'acme/site' }

function hardOf(error: unknown): object | undefined {
  const hard = loopErrorOf(error)
  return hard === undefined ? undefined : { name: hard.name, kind: hard.kind, message: hard.message }
}

type Escalate = { fatal?: boolean; user?: boolean }

async function throughShallot(escalate?: Escalate): Promise<{ error: unknown; modelCalls: number }> {
  const model = scriptedModel([{ toolCalls: [{ name: 'delete_repo', args }] }, { text: 'deleted, I think' }])
  const tools = [defineTool({ ...deleteRepo, effect: 'write' })]
  const outcome = await createAgent({ model, tools, ...(escalate === undefined ? {} : { escalate }) }).run({ input: 'delete acme/site' })
  return { error: outcome.status === 'stopped' ? outcome.error : undefined, modelCalls: model.requests.length }
}

async function throughAiSdk(escalate?: Escalate): Promise<{ error: unknown; modelCalls: number }> {
  let modelCalls = 0
  const model = new MockLanguageModelV3({
    doGenerate: async () => {
      modelCalls++
      const content =
        modelCalls === 1
          ? [{ type: 'tool-call' as const, toolCallId: 'call_1', toolName: 'delete_repo', input: JSON.stringify(args) }]
          : [{ type: 'text' as const, text: 'deleted, I think' }]
      return {
        content,
        finishReason: { unified: modelCalls === 1 ? ('tool-calls' as const) : ('stop' as const), raw: undefined },
        usage: {
          inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 5, text: 5, reasoning: undefined },
        },
        warnings: [],
      }
    },
  })
  const tools = {
    delete_repo: sdkTool({ description: deleteRepo.description, inputSchema: deleteRepo.input, execute: deleteRepo.execute }),
  }
  const effects = { delete_repo: 'write' } as const
  // The host takes the stack's escalation policy in its own options, in the same words as createAgent.
  const guarded = shallotTools(tools, { effects, ...(escalate === undefined ? {} : { escalate }) })
  try {
    await generateText({
      model,
      tools: guarded.tools,
      abortSignal: guarded.abortSignal,
      stopWhen: [stepCountIs(5), guarded.stopOnHardError],
      prompt: 'delete acme/site',
    })
  } catch (error) {
    return { error, modelCalls }
  }
  // generateText turns a throwing execute into a tool-error part; the hard error is kept on the adapter.
  return { error: guarded.error, modelCalls }
}

async function throughLangChain(escalate?: Escalate): Promise<{ error: unknown; modelCalls: number }> {
  const model = fakeModel()
    .respondWithTools([{ name: 'delete_repo', args }])
    .respond(new AIMessage('deleted, I think'))
  const tool = langChainTool(deleteRepo.execute, { name: deleteRepo.name, description: deleteRepo.description, schema: deleteRepo.input })
  const layer = shallotMiddleware({ effects: { delete_repo: 'write' }, ...(escalate === undefined ? {} : { escalate }) })
  const agent = createLangChainAgent({ model, tools: [tool], middleware: [layer] })
  try {
    await agent.invoke({ messages: [{ role: 'user', content: 'delete acme/site' }] })
    return { error: undefined, modelCalls: model.callCount }
  } catch (error) {
    return { error, modelCalls: model.callCount }
  }
}

describe('one failing tool, three hosts, one channel', () => {
  it('ends createAgent, the AI SDK and LangChain with the same LoopError, and no host asks the model again', async () => {
    const hosts = [await throughShallot(), await throughAiSdk(), await throughLangChain()]

    expect(LoopError.is(hosts[0]?.error)).toBe(true)
    expect(hosts.map((host) => hardOf(host.error))).toEqual([expectedChannel, expectedChannel, expectedChannel])
    // No host lets the model read the refusal as a soft result and carry on: each run ends at the tool call.
    expect(hosts.map((host) => host.modelCalls)).toEqual([1, 1, 1])
  })

  it('keeps the soft channel in all three when the stack’s policy lets user errors through', async () => {
    const hosts = [await throughShallot({ user: false }), await throughAiSdk({ user: false }), await throughLangChain({ user: false })]

    expect(hosts.map((host) => hardOf(host.error))).toEqual([undefined, undefined, undefined])
    // The model read the refusal and answered: a second model call in every host.
    expect(hosts.map((host) => host.modelCalls)).toEqual([2, 2, 2])
  })

  it('keeps the soft channel too when the policy comes with a ready stack', async () => {
    const sdkTools = {
      delete_repo: sdkTool({ description: deleteRepo.description, inputSchema: deleteRepo.input, execute: deleteRepo.execute }),
    }
    const stack = createStack({ tools: toShallotTools(sdkTools, { effects: { delete_repo: 'write' } }), escalate: { user: false } })
    const guarded = shallotTools(sdkTools, { stack })
    const lcTool = langChainTool(deleteRepo.execute, {
      name: deleteRepo.name,
      description: deleteRepo.description,
      schema: deleteRepo.input,
    })
    const lcStack = createStack({ tools: [toShallotTool(lcTool, { effect: 'write' })], escalate: { user: false } })

    for (const stackOfHost of [stack, lcStack]) {
      const result = await stackOfHost.dispatch({ id: 'c1', name: 'delete_repo', args })
      expect(result.ok).toBe(false)
    }
    expect(guarded.error).toBeUndefined()
    // Escalation next to a ready stack is refused, not ignored: it belongs where the stack was built.
    expect(() => shallotTools(sdkTools, { stack, escalate: { user: false } })).toThrow(/escalate.*belongs to the stack/s)
    expect(() => shallotMiddleware({ stack: lcStack, escalate: { user: false } })).toThrow(/escalate.*belongs to the stack/s)
  })
})
