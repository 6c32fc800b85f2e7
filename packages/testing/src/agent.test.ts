import { createAgent, memoryCheckpoints } from '@shallot/agent'
import { defineTool, ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { manualClock } from './manual-clock.js'
import { scriptedModel } from './scripted-model.js'

function files(initial: Record<string, string>) {
  const fs = new Map(Object.entries(initial))
  let reads = 0
  const readFile = defineTool({
    name: 'read_file',
    description: 'Read a text file',
    input: z.object({ path: z.string() }),
    effect: 'read',
    execute: ({ path }) => {
      reads++
      const text = fs.get(path)
      if (text === undefined) throw new ToolError('not_found', `file ${path} not found`, { hint: `files: ${[...fs.keys()].join(', ')}` })
      return text
    },
  })
  return { readFile, reads: () => reads }
}

describe('createAgent', () => {
  it('completes when the model answers without tool calls, after reading a soft error and fixing the path', async () => {
    const { readFile } = files({ 'src/main.rs': 'fn main() {}' })
    const model = scriptedModel([
      { toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
      ({ lastResults }) =>
        lastResults[0]?.ok === false ? { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] } : { text: 'unexpected' },
      ({ lastResults }) => ({ text: `main is: ${lastResults[0]?.content}` }),
    ])
    const outcome = await createAgent({ model, tools: [readFile] }).run({ input: 'what is in main?' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'main is: fn main() {}', turns: 3, steps: 5 })
    const toolMessages = outcome.transcript.filter((m) => m.role === 'tool')
    expect(toolMessages.map((m) => m.ok)).toEqual([false, true])
    expect(JSON.parse(toolMessages[0]?.content ?? '')).toMatchObject({ error: 'not_found', message: 'file src/mian.rs not found' })
  })

  it('stops at maxTurns with a report naming the completed turns', async () => {
    const { readFile } = files({ a: '1' })
    const model = scriptedModel([{ toolCalls: [{ name: 'read_file', args: { path: 'a' } }] }], { onEnd: 'repeat' })
    const outcome = await createAgent({ model, tools: [readFile], limits: { maxTurns: 3 } }).run({ input: 'loop' })
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error.kind).toBe('budget_exhausted')
    expect(outcome.report.completedTurns).toBe(3)
    expect(outcome.report.text).toContain('Completed: 3 turns, 3 tool calls')
    expect(outcome.report.text).toContain('turn limit reached: 3 turns')
  })

  it('stops at maxSteps, counting model calls and tool attempts', async () => {
    const { readFile, reads } = files({ a: '1' })
    const model = scriptedModel(
      [
        {
          toolCalls: [
            { name: 'read_file', args: { path: 'a' } },
            { name: 'read_file', args: { path: 'a' } },
          ],
        },
      ],
      {
        onEnd: 'repeat',
      },
    )
    const outcome = await createAgent({ model, tools: [readFile], limits: { maxSteps: 7 } }).run({ input: 'spend' })
    // turn 1: model + 2 tools = 3, turn 2: 3 more = 6, turn 3: model = 7, then the first tool call finds no step left.
    expect(outcome).toMatchObject({ status: 'stopped', turns: 2, steps: 7 })
    if (outcome.status === 'stopped') expect(outcome.error.kind).toBe('budget_exhausted')
    expect(reads()).toBe(4)
  })

  it('runs the calls of one turn in parallel up to the limit and appends results in call order', async () => {
    const clock = manualClock()
    let running = 0
    let peak = 0
    const slow = defineTool({
      name: 'slow',
      description: 'Wait, then echo',
      input: z.object({ ms: z.number(), tag: z.string() }),
      effect: 'read',
      execute: async ({ ms, tag }, { signal }) => {
        running++
        peak = Math.max(peak, running)
        await clock.sleep(ms, signal)
        running--
        return tag
      },
    })
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'slow', args: { ms: 30, tag: 'first' } },
          { name: 'slow', args: { ms: 10, tag: 'second' } },
          { name: 'slow', args: { ms: 20, tag: 'third' } },
        ],
      },
      { text: 'done' },
    ])
    const agent = createAgent({ model, tools: [slow], clock, limits: { maxParallelToolCalls: 2 } })
    const pending = agent.run({ input: 'go' })
    await clock.runAll()
    const outcome = await pending
    expect(outcome.status).toBe('completed')
    expect(outcome.transcript.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['first', 'second', 'third'])
    expect(peak).toBe(2)
  })

  it('ends as cancelled when the signal aborts mid-tool, and the tool sees its signal abort', async () => {
    const clock = manualClock()
    let toolSignal: AbortSignal | undefined
    const hang = defineTool({
      name: 'hang',
      description: 'Never finishes on its own',
      input: z.object({}),
      effect: 'read',
      execute: async (_args, { signal }) => {
        toolSignal = signal
        await clock.sleep(1e9, signal)
      },
    })
    const controller = new AbortController()
    const agent = createAgent({ model: scriptedModel([{ toolCalls: [{ name: 'hang', args: {} }] }]), tools: [hang], clock })
    const pending = agent.run({ input: 'wait', signal: controller.signal })
    await clock.advance(5)
    controller.abort()
    const outcome = await pending
    expect(outcome.status).toBe('stopped')
    if (outcome.status === 'stopped') expect(outcome.error.kind).toBe('cancelled')
    expect(toolSignal?.aborted).toBe(true)
    expect(clock.pending).toBe(0)
  })

  it('resumes after a crash at the next turn without re-running completed tool calls', async () => {
    const { readFile, reads } = files({ a: 'A', b: 'B' })
    const checkpoints = memoryCheckpoints()
    const script = [
      { toolCalls: [{ name: 'read_file', args: { path: 'a' } }] },
      { toolCalls: [{ name: 'read_file', args: { path: 'b' } }] },
    ]
    // First process: the model provider dies for good on turn 3.
    const crashing = scriptedModel([...script, () => Promise.reject(new Error('process killed'))])
    const first = await createAgent({ model: crashing, tools: [readFile], checkpoints }).run({ input: 'read a and b', runId: 'run-1' })
    expect(first).toMatchObject({ status: 'stopped', turns: 2 })
    expect(reads()).toBe(2)
    // Second process: a fresh agent picks the run up from its checkpoint.
    const healthy = scriptedModel([({ messages }) => ({ text: `seen ${messages.filter((m) => m.role === 'tool').length} results` })])
    const resumed = await createAgent({ model: healthy, tools: [readFile], checkpoints }).resume('run-1')
    expect(resumed).toMatchObject({ status: 'completed', output: 'seen 2 results', turns: 3 })
    expect(reads()).toBe(2)
  })

  it('ends the run on a fatal soft error unless escalation is turned off', async () => {
    const denied = defineTool({
      name: 'delete_repo',
      description: 'Delete a repository',
      input: z.object({}),
      execute: () => {
        throw new ToolError('permission_denied', 'token lacks admin scope', { category: 'fatal' })
      },
    })
    const script = () => scriptedModel([{ toolCalls: [{ name: 'delete_repo', args: {} }] }, { text: 'gave up' }])
    const hard = await createAgent({ model: script(), tools: [denied] }).run({ input: 'x' })
    expect(hard.status === 'stopped' && hard.error.kind).toBe('fatal')
    const soft = await createAgent({ model: script(), tools: [denied], escalate: { fatal: false } }).run({ input: 'x' })
    expect(soft).toMatchObject({ status: 'completed', output: 'gave up' })
  })

  // createAgent asks the model only through its onion: without a retry layer a transient failure is not
  // repeated (retry() in modelMiddleware, or defaultModelMiddleware(), repeats it).
  it('asks a transiently failing model once without a retry layer, then gives up as model_failed', async () => {
    const clock = manualClock()
    let calls = 0
    const flaky = {
      async generate() {
        calls++
        throw Object.assign(new Error('overloaded'), { status: 529 })
      },
    }
    const pending = createAgent({ model: flaky, tools: [], clock }).run({ input: 'x' })
    await clock.runAll()
    const outcome = await pending
    expect(calls).toBe(1)
    expect(outcome.status === 'stopped' && outcome.error.message).toBe('the model call failed after 1 attempt: overloaded')
  })

  it('rejects bad options at construction, naming the option', () => {
    expect(() => createAgent({ model: scriptedModel([{ text: 'x' }]), tools: [], limits: { maxTurns: -1 } })).toThrow(/limits\.maxTurns/)
    expect(() => createAgent({ model: {} as never, tools: [] })).toThrow(/model must be an object with generate/)
  })
})

describe('logging', () => {
  it('writes one structured line per tool call, per turn and per run end', async () => {
    const lines: Array<Record<string, unknown> & { msg?: string | undefined }> = []
    const logger = {
      bindings: {} as Record<string, unknown>,
      debug() {},
      info(obj: object, msg?: string) {
        lines.push({ ...this.bindings, ...obj, msg })
      },
      warn(obj: object, msg?: string) {
        lines.push({ ...this.bindings, ...obj, msg })
      },
      error(obj: object, msg?: string) {
        lines.push({ ...this.bindings, ...obj, msg })
      },
      child(bindings: Record<string, unknown>) {
        return { ...this, bindings: { ...this.bindings, ...bindings } }
      },
    }
    const { readFile } = files({ 'a.txt': 'A' })
    const model = scriptedModel([{ toolCalls: [{ name: 'read_file', args: { path: 'nope' } }] }, { text: 'done' }])
    await createAgent({ model, tools: [readFile], logger }).run({ input: 'x', runId: 'run-log' })
    const call = lines.find((l) => l.msg === 'tool call')
    expect(call).toMatchObject({
      runId: 'run-log',
      turn: 1,
      callId: 'call_1_1',
      tool: 'read_file',
      attempts: 1,
      outcome: 'soft_error',
      code: 'not_found',
      category: 'recoverable',
    })
    expect(typeof call?.durationMs).toBe('number')
    expect(lines.find((l) => l.msg === 'turn completed')).toMatchObject({ runId: 'run-log', turn: 1, calls: 1, failed: 1 })
    expect(lines.at(-1)).toMatchObject({ runId: 'run-log', msg: 'run completed', outcome: 'completed', turns: 2 })
  })
})
