import { randomUUID } from 'node:crypto'
import type { Agent } from '@shallot/agent'
import {
  type Clock,
  type Logger,
  type Middleware,
  type ModelAdapter,
  parseOptions,
  silentLogger,
  type ToolContext,
  ToolError,
} from '@shallot/core'
import { z } from 'zod'
import { sanitizerOf } from './attributes.js'
import { errorTypeOf } from './error-type.js'
import { factsOf, RunTally, tallyScope } from './usage.js'

export interface OperatorLogOptions {
  /** Your secrets, redacted from every logged text (the task, error messages, hints). */
  secrets?: readonly (string | RegExp)[]
  /** The limits you gave `createAgent`, logged on "run started" so a stopped run's line can be read against them. */
  limits?: Record<string, number>
  /** Longest task text logged. Default 500 characters. */
  maxTaskChars?: number
}

/** The three places operator lines come from; use all three on one agent. */
export interface OperatorLog {
  /** A layer (put it outermost) that logs each soft error with its sanitized message, at info. */
  readonly middleware: Middleware
  /** Wraps the model: one line per model call with latency, attempt, tokens and finish reason. */
  model(model: ModelAdapter, clock?: Clock): ModelAdapter
  /** Wraps the agent: "run started" (task sanitized, limits) and "run finished" (token and step totals). */
  agent(agent: Agent): Agent
}

const optionsSchema = z
  .object({
    secrets: z.array(z.union([z.string(), z.instanceof(RegExp)])).optional(),
    limits: z.record(z.string(), z.number()).optional(),
    maxTaskChars: z.number().int().positive().default(500),
  })
  .strict()

type Sanitizer = ReturnType<typeof sanitizerOf>
type Parsed = z.output<typeof optionsSchema>

/** A run's tally and logger, from the agent wrapper to the model wrapper. */
const scope = tallyScope()
const runLogs = new WeakMap<RunTally, Logger>()
/** Runs whose agent writes the lines itself: the model wrapper stays quiet inside them. */
const quiet = new WeakSet<RunTally>()

function safe(write: () => void): void {
  try {
    write()
  } catch {
    // A logger that throws never fails a run.
  }
}

/**
 * pino lines an operator can act on: run started, each model call, each soft error, run finished
 * with totals. Every text is sanitized with core's sanitizer and your secrets.
 *
 * Core writes these lines itself when the agent has a logger (`createAgent({ logger })`: `run
 * started`, `model call`, `tool call` with the soft error's message, `run completed` / `run
 * stopped` with the totals), so each piece here writes a line only where core writes none: the
 * layer when the stack has no logger, the model and agent wrappers when the agent has none.
 *
 * @deprecated Give the agent your logger: `createAgent({ model, tools, logger: pino() })`.
 * @example
 * const log = operatorLog(pino())
 * const agent = log.agent(createAgent({ model: log.model(model), tools, middleware: [log.middleware, ...defaultMiddleware()] }))
 */
export function operatorLog(logger: Logger, options: OperatorLogOptions = {}): OperatorLog {
  if (typeof logger?.info !== 'function' || typeof logger.child !== 'function')
    throw new TypeError('operatorLog(): logger must be a pino logger (or anything with info, warn, error, debug and child)')
  const parsed = parseOptions('operatorLog()', optionsSchema, options)
  const text = sanitizerOf(parsed.secrets)
  return {
    middleware: softErrorLayer(logger, text),
    model: (model, clock = { now: () => performance.now(), sleep: () => Promise.resolve() }) => loggedModel(logger, text, model, clock),
    agent: (agent) => loggedAgent(logger, text, parsed, agent),
  }
}

/** The layer: each soft error's line, with its sanitized message, when the stack has no logger of its own. */
function softErrorLayer(logger: Logger, text: Sanitizer): Middleware {
  async function operatorLogLayer(ctx: ToolContext, next: () => Promise<void>): Promise<void> {
    // A stack with a logger writes the soft error's sanitized message on its own `tool call` line.
    if (ctx.log !== silentLogger) return next()
    try {
      await next()
    } catch (err) {
      if (ToolError.is(err)) {
        const fields: Record<string, unknown> = {
          runId: ctx.run.id,
          turn: ctx.run.turn,
          callId: ctx.call.id,
          tool: ctx.call.name,
          code: err.code,
          category: err.category,
          attempts: ctx.attempt,
          message: text.text(err.message, 500),
        }
        if (err.hint !== undefined) fields.hint = text.text(err.hint, 300)
        safe(() => logger.info(fields, 'tool call failed (soft error, the model reads it)'))
      }
      throw err
    }
  }
  return operatorLogLayer
}

/** The model, wrapped: a line per call (latency, attempt, tokens, finish reason) unless its run's agent logs its own. */
function loggedModel(logger: Logger, text: Sanitizer, model: ModelAdapter, clock: Clock): ModelAdapter {
  if (typeof model?.generate !== 'function')
    throw new TypeError('operatorLog().model(): model must have generate({ messages, tools, signal })')
  return {
    async generate(request) {
      const tally = scope.getStore()
      if (tally !== undefined && quiet.has(tally)) return model.generate(request)
      const log = (tally === undefined ? undefined : runLogs.get(tally)) ?? logger
      const started = clock.now()
      const attempt = (tally?.failedInARow ?? 0) + 1
      if (tally !== undefined) tally.modelAttempts++
      try {
        const response = await model.generate(request)
        const facts = factsOf(response)
        if (tally !== undefined) {
          tally.modelCalls++
          tally.failedInARow = 0
          tally.inputTokens += facts.inputTokens ?? 0
          tally.outputTokens += facts.outputTokens ?? 0
        }
        safe(() =>
          log.info(
            {
              latencyMs: clock.now() - started,
              attempt,
              inputTokens: facts.inputTokens,
              outputTokens: facts.outputTokens,
              finishReason: facts.finishReason,
              toolCalls: facts.toolCalls,
            },
            'model call',
          ),
        )
        return response
      } catch (err) {
        if (tally !== undefined) tally.failedInARow++
        const message = text.text(err instanceof Error ? err.message : String(err), 500)
        safe(() => log.warn({ latencyMs: clock.now() - started, attempt, errorType: errorTypeOf(err), message }, 'model call failed'))
        throw err
      }
    },
  }
}

/** The agent, wrapped: "run started" and "run finished" lines with the run's totals, unless the agent logs its runs itself. */
function loggedAgent(logger: Logger, text: Sanitizer, options: Parsed, agent: Agent): Agent {
  if (typeof agent?.run !== 'function') throw new TypeError('operatorLog().agent(): agent must be what createAgent() returns')
  const clock = agent.stack.clock
  if (agent.stack.logger !== silentLogger) {
    // The agent logs its runs itself; the model wrapper only needs to know it should stay quiet.
    const hushed = (go: () => ReturnType<Agent['run']>) => {
      const tally = new RunTally()
      quiet.add(tally)
      return scope.run(tally, go)
    }
    return {
      stack: agent.stack,
      run: (runOptions) => hushed(() => agent.run(runOptions)),
      resume: (runId, resumeOptions) => hushed(() => agent.resume(runId, resumeOptions)),
    }
  }
  const logging: RunLogging = { logger, text, options, clock }
  const logged = (runId: string, task: string | undefined, go: () => ReturnType<Agent['run']>) => logRun(logging, { runId, task }, go)
  return {
    stack: agent.stack,
    run: (runOptions) => {
      const runId = runOptions?.runId ?? randomUUID().slice(0, 12)
      return logged(runId, typeof runOptions?.input === 'string' ? runOptions.input : '', () => agent.run({ ...runOptions, runId }))
    },
    resume: (runId, resumeOptions) => logged(runId, undefined, () => agent.resume(runId, resumeOptions)),
  }
}

/** How a wrapped agent's runs are logged: the operator log's logger, sanitizer and options, on the agent's clock. */
interface RunLogging {
  readonly logger: Logger
  readonly text: Sanitizer
  readonly options: Parsed
  readonly clock: Clock
}

/**
 * One run of a wrapped agent, its tally kept in `scope` for the model wrapper, logged as it starts and ends.
 * `task` is the run's input; none for a resumed run.
 */
async function logRun(
  { logger, text, options, clock }: RunLogging,
  { runId, task }: { readonly runId: string; readonly task: string | undefined },
  go: () => ReturnType<Agent['run']>,
): ReturnType<Agent['run']> {
  const tally = new RunTally()
  const log = logger.child({ runId })
  runLogs.set(tally, log)
  const started = clock.now()
  const fields: Record<string, unknown> = task === undefined ? { resumed: true } : { task: text.text(task, options.maxTaskChars) }
  if (options.limits !== undefined) fields.limits = options.limits
  safe(() => log.info(fields, 'run started'))
  try {
    const outcome = await scope.run(tally, go)
    const totals = {
      status: outcome.status,
      turns: outcome.turns,
      steps: outcome.steps,
      modelCalls: tally.modelCalls,
      modelAttempts: tally.modelAttempts,
      inputTokens: tally.inputTokens,
      outputTokens: tally.outputTokens,
      durationMs: clock.now() - started,
    }
    if (outcome.status === 'stopped') {
      const { kind, message } = outcome.error
      safe(() => log.warn({ ...totals, kind, message: text.text(message, 500) }, 'run finished'))
    } else safe(() => log.info(totals, 'run finished'))
    return outcome
  } catch (err) {
    safe(() => log.error({ errorType: errorTypeOf(err), durationMs: clock.now() - started }, 'run threw'))
    throw err
  }
}
