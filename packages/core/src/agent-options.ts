import { z } from 'zod'
import type { CheckpointStore } from './checkpoints.js'
import { guardLogger } from './logger.js'
import type { ModelAdapter } from './model.js'
import type { ModelRetry } from './model-call.js'
import { OptionsError, parseOptions } from './options.js'
import { createStack, type Stack, type StackOptions } from './stack.js'
import type { Clock, Logger, Middleware } from './types.js'

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
  /**
   * Whether a soft error of category `fatal` / `user` ends the run. Default: both do. It is the
   * stack's policy (`createStack({ escalate })`), passed to the stack this agent builds; with a ready
   * `stack`, set it there.
   */
  escalate?: { fatal?: boolean; user?: boolean }
  /** Retries of a failing model call. Default 3 attempts, full jitter from 250 ms, capped at 4 s. */
  modelRetry?: Partial<ModelRetry>
}

const DEFAULT_LIMITS: AgentLimits = { maxTurns: 20, maxSteps: 100, modelTimeoutMs: 60_000, maxParallelToolCalls: 4 }
const DEFAULT_MODEL_RETRY: ModelRetry = { maxAttempts: 3, baseMs: 250, capMs: 4000 }

const agentOptionsSchema = z.object({
  limits: z
    .strictObject({
      maxTurns: z.number().int().positive().default(DEFAULT_LIMITS.maxTurns),
      maxSteps: z.number().int().positive().default(DEFAULT_LIMITS.maxSteps),
      modelTimeoutMs: z.number().positive().default(DEFAULT_LIMITS.modelTimeoutMs),
      maxParallelToolCalls: z.number().int().positive().default(DEFAULT_LIMITS.maxParallelToolCalls),
    })
    .default(DEFAULT_LIMITS),
  modelRetry: z
    .strictObject({
      maxAttempts: z.number().int().min(1).max(10).default(DEFAULT_MODEL_RETRY.maxAttempts),
      baseMs: z.number().nonnegative().default(DEFAULT_MODEL_RETRY.baseMs),
      capMs: z.number().nonnegative().default(DEFAULT_MODEL_RETRY.capMs),
    })
    .default(DEFAULT_MODEL_RETRY),
})

/** What the loop runs with, every option checked and defaulted. */
export interface AgentSettings {
  readonly model: ModelAdapter
  readonly stack: Stack
  readonly limits: AgentLimits
  readonly modelRetry: ModelRetry
  readonly clock: Clock
  readonly random: () => number
  readonly logger: Logger
  readonly checkpoints: CheckpointStore | undefined
}

/** Checks `createAgent`'s options and builds the stack when the caller gave tools instead of one. */
export function agentSettings(options: AgentOptions): AgentSettings {
  if (typeof options?.model?.generate !== 'function')
    throw new TypeError('createAgent(): model must be an object with generate({ messages, tools, signal })')
  const { limits, modelRetry } = parseOptions('createAgent()', agentOptionsSchema, {
    limits: options.limits,
    modelRetry: options.modelRetry,
  })
  if (options.stack === undefined && options.tools === undefined) throw new TypeError('createAgent(): pass either stack or tools')
  if (options.stack !== undefined && options.escalate !== undefined) {
    // Silently ignoring it would leave a run going on that the caller asked to stop.
    throw new OptionsError('createAgent()', [
      { path: 'escalate', message: 'belongs to the stack; with `stack`, pass it to createStack({ escalate })' },
    ])
  }
  const stack =
    options.stack ??
    createStack({
      tools: options.tools ?? [],
      ...(options.middleware === undefined ? {} : { middleware: options.middleware }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.random === undefined ? {} : { random: options.random }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(options.escalate === undefined ? {} : { escalate: options.escalate }),
    })
  return {
    model: options.model,
    stack,
    limits,
    modelRetry,
    clock: options.clock ?? stack.clock,
    random: options.random ?? stack.random,
    logger: guardLogger(options.logger ?? stack.logger),
    checkpoints: options.checkpoints,
  }
}
