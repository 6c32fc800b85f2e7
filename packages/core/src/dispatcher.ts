import type { z } from 'zod'
import { LoopError, ToolError } from './errors.js'
import { describeShape } from './shape.js'
import { closest } from './suggest.js'
import { formatPath } from './text/format-path.js'
import type { AnyTool, DeferredSignal, Logger, ToolCall, ToolContext, ToolExecuteContext } from './types.js'

/** The error a layer or tool should see when `signal` has aborted: its own reason if it is ours, else cancellation. */
export function abortReason(signal: { readonly reason: unknown }): ToolError | LoopError {
  const reason: unknown = signal.reason
  if (ToolError.is(reason) || LoopError.is(reason)) return reason
  return new LoopError('cancelled', 'the run was cancelled', { cause: reason })
}

/** The soft answer to a tool name that does not exist. */
export function unknownTool(name: string, available: readonly string[]): ToolError {
  const list = available.length > 0 ? available.join(', ') : '(none)'
  const guess = closest(name, available)
  const suggestion = guess === undefined ? '' : ` Did you mean '${guess}'?`
  return new ToolError('unknown_tool', `Tool not found: ${name}. Available: ${list}.${suggestion}`, {
    category: 'recoverable',
    retryable: false,
    safeToRepeat: true,
    hint: guess === undefined ? `call one of: ${list}` : `call '${guess}' instead`,
  })
}

/** The soft answer to arguments the tool's schema refused: every issue with its path, the expected shape as hint. */
export function invalidArguments(tool: AnyTool, error: z.ZodError): ToolError {
  const issues = error.issues.slice(0, 20).map((issue) => `${formatPath(issue.path)}: ${issue.message}`)
  const more = error.issues.length > 20 ? `; and ${error.issues.length - 20} more` : ''
  return new ToolError('invalid_arguments', `Invalid arguments for ${tool.name}: ${issues.join('; ')}${more}`, {
    category: 'recoverable',
    retryable: false,
    safeToRepeat: true,
    hint: `expected ${shapeOf(tool)}`,
    cause: error,
  })
}

const shapes = new WeakMap<AnyTool, string>()
function shapeOf(tool: AnyTool): string {
  let shape = shapes.get(tool)
  if (shape === undefined) {
    shape = describeShape(tool.input)
    shapes.set(tool, shape)
  }
  return shape
}

async function parseArgs(tool: AnyTool, args: unknown): Promise<unknown> {
  let parsed: z.ZodSafeParseResult<unknown>
  try {
    parsed = tool.input.safeParse(args)
  } catch {
    // Schemas with async refinements cannot be parsed synchronously.
    parsed = await tool.input.safeParseAsync(args)
  }
  if (!parsed.success) throw invalidArguments(tool, parsed.error)
  return parsed.data
}

/**
 * What `execute` receives. A class so its `signal` getter lives on the prototype (one shape for every
 * call) and creates a deferred signal only when the tool reads it.
 */
class AttemptContext implements ToolExecuteContext {
  readonly #source: AbortSignal | DeferredSignal
  readonly call: ToolCall
  readonly idempotencyKey: string | undefined
  readonly attempt: number
  readonly log: Logger

  constructor(call: ToolCall, source: AbortSignal | DeferredSignal, idempotencyKey: string | undefined, attempt: number, log: Logger) {
    this.call = call
    this.#source = source
    this.idempotencyKey = idempotencyKey
    this.attempt = attempt
    this.log = log
  }

  get signal(): AbortSignal {
    const source = this.#source
    return source instanceof AbortSignal ? source : source.signal
  }
}

/**
 * The innermost step of every stack: validates the arguments with the tool's schema, spends one
 * step of the run's budget, runs the tool and sets `ctx.result`. A result that arrives after this
 * attempt's signal aborted is dropped, so a timed-out attempt can never change state.
 */
export function createTerminal(toolNames: () => readonly string[]) {
  return async function terminal(ctx: ToolContext): Promise<void> {
    const tool = ctx.tool
    if (tool === undefined) throw unknownTool(ctx.call.name, toolNames())
    // This attempt's signal, captured now: a deferred one is only created if the tool reads it.
    const current = ctx.currentSignal()
    if (current.aborted) throw abortReason(current)
    const args = await parseArgs(tool, ctx.call.args)
    if (current.aborted) throw abortReason(current)
    ctx.run.budget.spend(`tool:${tool.name}`)
    ctx.executions++
    const value = await tool.execute(args, new AttemptContext(ctx.call, current, ctx.idempotencyKey, ctx.attempt, ctx.log))
    if (current.aborted) throw abortReason(current)
    ctx.result = { value }
  }
}
