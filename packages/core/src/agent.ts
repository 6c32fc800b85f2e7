import { setMaxListeners } from 'node:events'
import { nanoid } from 'nanoid'
import { z } from 'zod'
import { abortReason, onAbort } from './channel.js'
import type { CallRecord, CheckpointStore, RunSnapshot, TurnRecord } from './checkpoints.js'
import { LoopError } from './errors.js'
import { guardLogger, silentLogger } from './logger.js'
import type { Message, ModelAdapter, ModelTool } from './model.js'
import { callModel, type ModelRetry } from './model-call.js'
import { parseOptions } from './options.js'
import { buildReport, type RunReport } from './report.js'
import { createRun, type MutableRun } from './run.js'
import { jsonSchemaOf } from './shape.js'
import { createStack, type Stack, type StackOptions } from './stack.js'
import type { AnyTool, Clock, Logger, Middleware, ToolCall, ToolResult } from './types.js'

export interface AgentLimits {
  /** Model turns per run. Default 20. */
  maxTurns: number
  /** Steps per run: every model call and every tool attempt (retries included) spends one. Default 100. */
  maxSteps: number
  /** Deadline of one model call. Default 60 s. */
  modelTimeoutMs: number
  /** Tool calls of one turn that run at once. Default 4. */
  maxParallelToolCalls: number
}

export interface AgentOptions {
  model: ModelAdapter
  /** Either a ready stack, or the tools (and optionally middleware) to build one. */
  stack?: Stack
  tools?: StackOptions['tools']
  middleware?: Middleware | readonly Middleware[]
  limits?: Partial<AgentLimits>
  logger?: Logger
  clock?: Clock
  random?: () => number
  checkpoints?: CheckpointStore
  /** Whether a soft error of category `fatal` / `user` ends the run. Default: both do. */
  escalate?: { fatal?: boolean; user?: boolean }
  /** Retries of a failing model call. Default 3 attempts, full jitter from 250 ms, capped at 4 s. */
  modelRetry?: Partial<ModelRetry>
}

export type RunOutcome =
  | {
      readonly status: 'completed'
      readonly runId: string
      readonly output: string
      readonly turns: number
      readonly steps: number
      readonly transcript: readonly Message[]
    }
  | {
      readonly status: 'stopped'
      readonly runId: string
      readonly error: LoopError
      readonly report: RunReport
      readonly turns: number
      readonly steps: number
      readonly transcript: readonly Message[]
    }

export interface Agent {
  readonly stack: Stack
  /** Runs a task to completion or to a hard stop. Never rejects for hard errors: they are in the outcome. */
  run(options: { input: string; signal?: AbortSignal; runId?: string }): Promise<RunOutcome>
  /** Continues a checkpointed run at its next turn; completed turns are never re-run. */
  resume(runId: string, options?: { signal?: AbortSignal }): Promise<RunOutcome>
}

const optionsSchema = z.object({
  limits: z
    .object({
      maxTurns: z.number().int().positive().default(20),
      maxSteps: z.number().int().positive().default(100),
      modelTimeoutMs: z.number().positive().default(60_000),
      maxParallelToolCalls: z.number().int().positive().default(4),
    })
    .strict()
    .default({ maxTurns: 20, maxSteps: 100, modelTimeoutMs: 60_000, maxParallelToolCalls: 4 }),
  escalate: z
    .object({ fatal: z.boolean().default(true), user: z.boolean().default(true) })
    .strict()
    .default({ fatal: true, user: true }),
  modelRetry: z
    .object({
      maxAttempts: z.number().int().min(1).max(10).default(3),
      baseMs: z.number().nonnegative().default(250),
      capMs: z.number().nonnegative().default(4000),
    })
    .strict()
    .default({ maxAttempts: 3, baseMs: 250, capMs: 4000 }),
})

/** Runs `work` over `items` with at most `limit` at once; results in input order. */
async function pool<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
  const results: PromiseSettledResult<R>[] = new Array(items.length)
  let nextIndex = 0
  const worker = async () => {
    while (nextIndex < items.length) {
      const index = nextIndex++
      try {
        results[index] = { status: 'fulfilled', value: await work(items[index] as T) }
      } catch (reason) {
        results[index] = { status: 'rejected', reason }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

const noop = () => {}

function record(result: ToolResult): CallRecord {
  const base = { id: result.callId, name: result.name, ok: result.ok, attempts: result.attempts, replayed: result.replayed }
  return result.error === undefined ? base : { ...base, code: result.error.code }
}

/**
 * An agent: asks the model, dispatches its tool calls through the stack, appends the results, and
 * repeats until the model answers without tool calls or a hard error stops the run.
 *
 * @example
 * const agent = createAgent({ model, tools: [readFile], middleware: defaultMiddleware() })
 * const outcome = await agent.run({ input: 'Summarise src/main.rs' })
 * if (outcome.status === 'stopped') console.error(outcome.report.text)
 */
export function createAgent(options: AgentOptions): Agent {
  if (typeof options?.model?.generate !== 'function')
    throw new TypeError('createAgent(): model must be an object with generate({ messages, tools, signal })')
  const { limits, escalate, modelRetry } = parseOptions('createAgent()', optionsSchema, {
    limits: options.limits,
    escalate: options.escalate,
    modelRetry: options.modelRetry,
  })
  if (options.stack === undefined && options.tools === undefined) throw new TypeError('createAgent(): pass either stack or tools')
  const stack =
    options.stack ??
    createStack({
      tools: options.tools ?? [],
      ...(options.middleware === undefined ? {} : { middleware: options.middleware }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.random === undefined ? {} : { random: options.random }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    })
  const clock = options.clock ?? stack.clock
  const random = options.random ?? stack.random
  const logger = guardLogger(options.logger ?? stack.logger)
  const checkpoints = options.checkpoints
  const schemas = new Map<AnyTool, Record<string, unknown>>()

  function modelTools(run: MutableRun): ModelTool[] {
    return [...stack.tools.values()].map((tool) => {
      let inputSchema = schemas.get(tool)
      if (inputSchema === undefined) {
        inputSchema = jsonSchemaOf(tool.input)
        schemas.set(tool, inputSchema)
      }
      const note = stack.describeTool(tool, run)
      return note === undefined
        ? { name: tool.name, description: tool.description, inputSchema }
        : { name: tool.name, description: `${note} ${tool.description}`, inputSchema, note }
    })
  }

  /**
   * Dispatches one turn's calls on the run's own signal alone: no per-call or per-turn signal to
   * combine. One hard error ends the run, so it aborts that signal, which stops the sibling calls.
   */
  async function dispatchTurn(calls: readonly ToolCall[], run: MutableRun, stopRun: AbortController): Promise<ToolResult[]> {
    const dispatchOne = async (call: ToolCall) => {
      try {
        return await stack.dispatch(call, { run })
      } catch (err) {
        if (!stopRun.signal.aborted) stopRun.abort(err)
        throw err
      }
    }
    if (calls.length === 1) {
      try {
        return [await dispatchOne(calls[0] as ToolCall)]
      } catch (err) {
        throw stopRun.signal.aborted ? abortReason(stopRun.signal) : err
      }
    }
    const settled = await pool(calls, limits.maxParallelToolCalls, dispatchOne)
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')
    if (failure !== undefined) throw stopRun.signal.aborted ? abortReason(stopRun.signal) : failure.reason
    return settled.map((s) => (s as PromiseFulfilledResult<ToolResult>).value)
  }

  function escalation(result: ToolResult): LoopError | undefined {
    const error = result.error
    if (error === undefined) return undefined
    const details = { tool: result.name, code: error.code, message: error.message }
    if (error.category === 'fatal' && escalate.fatal)
      return new LoopError('fatal', `${result.name} failed fatally: ${error.message}`, { details })
    if (error.category === 'user' && escalate.user) {
      return new LoopError('user_input_required', `${result.name} needs a person: ${error.message}`, { details })
    }
    return undefined
  }

  async function drive(snapshot: RunSnapshot, signal: AbortSignal | undefined): Promise<RunOutcome> {
    const { runId, input } = snapshot
    const log = logger === silentLogger ? silentLogger : logger.child({ runId })
    const transcript: Message[] = [...snapshot.transcript]
    const turns: TurnRecord[] = [...snapshot.turns]
    // The run's one signal: the caller's cancellation, or the first hard error of a turn. Every call
    // of the run listens to it through core's shared subscription, never with a signal of its own.
    const stopRun = new AbortController()
    // Layers that wait abortably (a retry's backoff) listen on it directly; a wide turn must not warn at 11.
    setMaxListeners(0, stopRun.signal)
    const unfollow = signal === undefined ? noop : onAbort(signal, () => stopRun.abort(signal.reason))
    const run = createRun({
      id: runId,
      maxSteps: limits.maxSteps,
      stepsUsed: snapshot.stepsUsed,
      state: snapshot.state,
      turn: snapshot.turn,
      signal: stopRun.signal,
    })
    const save = async (status: RunSnapshot['status'], output?: string) => {
      if (checkpoints === undefined) return
      const next: RunSnapshot = {
        version: 1,
        runId,
        input,
        status,
        turn: run.turn,
        stepsUsed: run.budget.used,
        state: run.state,
        transcript,
        turns,
        ...(output === undefined ? {} : { output }),
      }
      await checkpoints.save(JSON.parse(JSON.stringify(next)) as RunSnapshot)
    }
    try {
      for (;;) {
        if (run.signal.aborted) throw abortReason(run.signal)
        if (run.turn >= limits.maxTurns) {
          throw new LoopError('budget_exhausted', `turn limit reached: ${limits.maxTurns} turns`, {
            details: { maxTurns: limits.maxTurns },
          })
        }
        const turn = run.turn + 1
        run.turn = turn
        const response = await callModel(
          options.model,
          { messages: transcript, tools: modelTools(run) },
          { signal: run.signal, clock, random, budget: run.budget, log, timeoutMs: limits.modelTimeoutMs, retry: modelRetry },
        )
        const calls = response.toolCalls ?? []
        if (calls.length === 0) {
          const output = response.text ?? ''
          transcript.push({ role: 'assistant', content: output, toolCalls: [] })
          turns.push({ turn, text: output, calls: [] })
          await save('completed', output)
          log.info({ outcome: 'completed', turns: turn, steps: run.budget.used }, 'run completed')
          return { status: 'completed', runId, output, turns: turn, steps: run.budget.used, transcript }
        }
        const results = await dispatchTurn(calls, run, stopRun)
        for (const result of results) {
          const hard = escalation(result)
          if (hard !== undefined) throw hard
        }
        transcript.push(
          response.text === undefined
            ? { role: 'assistant', toolCalls: calls }
            : { role: 'assistant', content: response.text, toolCalls: calls },
        )
        for (const result of results) {
          transcript.push({ role: 'tool', callId: result.callId, name: result.name, content: result.content, ok: result.ok })
        }
        turns.push(
          response.text === undefined ? { turn, calls: results.map(record) } : { turn, text: response.text, calls: results.map(record) },
        )
        await save('running')
        log.info({ turn, calls: results.length, failed: results.filter((r) => !r.ok).length, steps: run.budget.used }, 'turn completed')
      }
    } catch (err) {
      const error = LoopError.is(err)
        ? err
        : new LoopError('tool_crashed', `the agent loop failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
      // The in-flight turn is dropped: only committed turns count.
      run.turn = turns.length === 0 ? snapshot.turn : (turns[turns.length - 1] as TurnRecord).turn
      await save('stopped').catch((saveError: unknown) => log.error({ err: saveError }, 'could not checkpoint the stopped run'))
      log.warn({ outcome: 'stopped', kind: error.kind, message: error.message, turns: turns.length, steps: run.budget.used }, 'run stopped')
      return {
        status: 'stopped',
        runId,
        error,
        report: buildReport(runId, input, turns, error),
        turns: turns.length,
        steps: run.budget.used,
        transcript,
      }
    } finally {
      unfollow()
    }
  }

  return {
    stack,
    async run({ input, signal, runId }) {
      if (typeof input !== 'string') throw new TypeError('agent.run(): input must be a string (the task)')
      const snapshot: RunSnapshot = {
        version: 1,
        runId: runId ?? nanoid(12),
        input,
        status: 'running',
        turn: 0,
        stepsUsed: 0,
        state: {},
        transcript: [{ role: 'user', content: input }],
        turns: [],
      }
      await checkpoints?.save(snapshot)
      return drive(snapshot, signal)
    },
    async resume(runId, { signal } = {}) {
      if (checkpoints === undefined)
        throw new TypeError('agent.resume(): this agent has no checkpoints store; pass createAgent({ checkpoints })')
      const snapshot = await checkpoints.load(runId)
      if (snapshot === undefined) throw new TypeError(`agent.resume(): no checkpoint for run "${runId}"`)
      if (snapshot.status === 'completed') {
        return {
          status: 'completed',
          runId,
          output: snapshot.output ?? '',
          turns: snapshot.turn,
          steps: snapshot.stepsUsed,
          transcript: snapshot.transcript,
        }
      }
      return drive(snapshot, signal)
    },
  }
}
