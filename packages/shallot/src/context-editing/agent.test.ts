// Through the umbrella's createAgent and defaultModelMiddleware(), against a local server that speaks Chat Completions
// (fakeProvider) and refuses a request body over 40,000 characters as OpenAI does (400 context_length_exceeded).

import { CONTEXT_EDITED, contextEditing } from '@shallot/context-editing'
import type { LayerEntry, ModelMiddleware } from '@shallot/core'
import { type FakeProvider, type FakeRequest, fakeProvider } from '@shallot/testing'
import { type AgentEvent, createAgent, defaultModelMiddleware, defineTool, type Message, memoryCheckpoints } from 'shallot'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { chatToolProblems, openAiChat } from './openai-chat.test-helper.js'

const WINDOW_CHARS = 40_000
const readLog = defineTool({
  name: 'read_log',
  description: 'Reads one log file',
  input: z.object({ file: z.string() }),
  effect: 'read',
  execute: ({ file }) => `${file}: ${'log line '.repeat(1_300)}`, // ~12 KB
})

let provider: FakeProvider | undefined
afterEach(async () => {
  await provider?.close()
  provider = undefined
})

/** `plan[i]` log files read in parallel on tool turn i + 1, then the answer; a body over the window is refused. */
async function logServer(plan: readonly number[]): Promise<FakeProvider> {
  let serial = 0
  let toolTurns = 0
  const step = (request: FakeRequest) => {
    const problems = chatToolProblems(request.body)
    if (problems.length > 0) return { fault: 'invalid_request' as const, message: problems.join('; ') }
    if (JSON.stringify(request.body).length > WINDOW_CHARS) return { fault: 'context_length_exceeded' as const }
    const calls = plan[toolTurns++]
    if (calls === undefined) return { text: `read ${serial} logs` }
    return {
      toolCalls: Array.from({ length: calls }, () => ({ id: `call_${serial}`, name: 'read_log', args: { file: `app-${serial++}.log` } })),
    }
  }
  provider = await fakeProvider({ script: [step], onEnd: 'repeat' })
  return provider
}

async function runWith(modelMiddleware: LayerEntry<ModelMiddleware>[], plan: readonly number[] = [2, 2, 2]) {
  const server = await logServer(plan)
  const events: Array<Record<string, unknown>> = []
  const checkpoints = memoryCheckpoints()
  const agent = createAgent({
    model: openAiChat(server.openaiBaseURL),
    tools: [readLog],
    modelMiddleware,
    checkpoints,
    onEvent: (event: AgentEvent) => events.push(event as unknown as Record<string, unknown>),
  })
  const outcome = await agent.run({ input: 'read the logs and say what failed', runId: 'logs-1' })
  return { outcome, events, server, snapshot: await checkpoints.load('logs-1') }
}

const toolContents = (messages: readonly Message[]) => messages.flatMap((m) => (m.role === 'tool' ? [m.content.length] : []))

describe('a run whose conversation outgrows the window', () => {
  it('stops with context_exceeded under the default model stack alone (what happens today)', async () => {
    const { outcome } = await runWith(defaultModelMiddleware())
    expect(outcome.status).toBe('stopped')
    expect(outcome.status === 'stopped' && outcome.error.kind).toBe('context_exceeded')
  })

  it('completes with contextEditing() outside it: old results cleared for the model, never paired wrong', async () => {
    const { outcome, events, server, snapshot } = await runWith([contextEditing({ keep: 2 }), ...defaultModelMiddleware()])
    expect(outcome).toMatchObject({ status: 'completed', output: 'read 6 logs' })
    // Every request the server got passed its tool-message rules (else it would have answered 400, not a tool call).
    expect(server.requests.every((r) => chatToolProblems(r.body).length === 0)).toBe(true)
    const edits = events.filter((e) => e.type === CONTEXT_EDITED)
    expect(edits).toEqual([
      expect.objectContaining({ reason: 'context_exceeded', strategy: 'clearToolResults', clearedToolResults: 2, turn: 3, attempt: 2 }),
      expect.objectContaining({ reason: 'context_exceeded', clearedToolResults: 4, turn: 4, attempt: 2 }),
    ])
    expect(JSON.stringify(edits)).not.toContain('log line') // counts, never content
    // The model read placeholders; the transcript and the checkpoint keep every result in full.
    expect(server.requests.at(-1)?.toolResults.map((r) => r.content)).toEqual([
      '[cleared]',
      '[cleared]',
      '[cleared]',
      '[cleared]',
      expect.stringContaining('log line'),
      expect.stringContaining('log line'),
    ])
    expect(outcome.transcript.filter((m) => m.role === 'tool')).toHaveLength(6)
    expect(toolContents(outcome.transcript).every((n) => n > 10_000)).toBe(true)
    expect(toolContents(snapshot?.transcript ?? []).every((n) => n > 10_000)).toBe(true)
  })

  it('with a budget, shortens before sending: no request is refused, one model request per turn', async () => {
    const { outcome, events, server } = await runWith([contextEditing({ keep: 2, maxInputTokens: 9_000 }), ...defaultModelMiddleware()])
    expect(outcome.status).toBe('completed')
    expect(server.requests).toHaveLength(4)
    expect(events.filter((e) => e.type === CONTEXT_EDITED).map((e) => e.reason)).toEqual(['over_budget', 'over_budget'])
  })

  it('a second context_exceeded after the edit ends the run, the report naming the edit', async () => {
    const { outcome, server } = await runWith(
      [contextEditing({ strategy: 'keepLast', keep: 1 }), ...defaultModelMiddleware()],
      [1, 2, 3, 4],
    )
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error.kind).toBe('context_exceeded')
    expect(outcome.error.message).toMatch(
      /^the request does not fit the model's context window even after context editing \(keepLast: 9 messages left out/,
    )
    expect(outcome.report.text).toContain('contextEditing: {"strategy":"keepLast","reason":"context_exceeded"')
    expect(outcome.report.text).toContain('Next: Narrow the task')
    expect(server.requests.slice(-2).map((r) => r.outcome)).toEqual(['faulted', 'faulted'])
  })
})
