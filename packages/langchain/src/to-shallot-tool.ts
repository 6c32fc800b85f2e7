import type { ToolMessage } from '@langchain/core/messages'
import {
  type AnyTool,
  abortReason,
  defineTool,
  parseOptions,
  TOOL_EFFECTS,
  type ToolDefinition,
  type ToolEffect,
  ToolError,
} from '@shallot/core'
import type { ToolCallRequest } from 'langchain'
import { z } from 'zod'
import { handlerCall } from './handler-call.js'
import { inputSchemaOf } from './input-schema-of.js'
import { shallotCalls } from './shallot-call.js'

/** The parts of a LangChain tool shallot uses: `tool(...)`, a `StructuredTool` or a `DynamicTool` fits. */
export interface LangChainTool {
  readonly name: string
  readonly description: string
  /** A zod schema or a JSON Schema. */
  readonly schema?: unknown
  invoke(input: never, config?: { signal?: AbortSignal }): Promise<unknown>
}

/** A tool's `reconcile`, as `defineTool` takes it: whether an attempt whose outcome is unknown took effect. */
// biome-ignore lint/suspicious/noExplicitAny: the arguments are the tool's own; annotate them where you write it
export type Reconcile = NonNullable<ToolDefinition<z.ZodType<any>>['reconcile']>

/** What a shallot tool needs that a LangChain tool does not say: the rest of `defineTool`'s spec. */
export interface ToShallotToolOptions {
  /** What repeating a call does to the world. Default `write`: LangChain has no such notion, so nothing is repeated unless you say so. */
  effect?: ToolEffect
  /** For a `write` whose outcome may be unknown: whether an attempt with these arguments took effect (see `defineTool`). */
  reconcile?: Reconcile
}

/** A `reconcile` as options take it. */
export const reconcileSchema = z.custom<Reconcile>((v) => typeof v === 'function', {
  message: "must be a function (args, context) => { status: 'applied', result } | { status: 'not_applied' } | { status: 'unknown' }",
})
const optionsSchema = z.strictObject({ effect: z.enum(TOOL_EFFECTS).optional(), reconcile: reconcileSchema.optional() })

const isToolMessage = (value: unknown): value is ToolMessage =>
  typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'tool' && 'tool_call_id' in value

/**
 * LangChain's handler runs the tool with LangChain's own signal, not the call's, so the call stops
 * waiting when its signal aborts (a sibling's hard stop, a deadline); the late result is dropped.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal))
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal))
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

function contentText(content: ToolMessage['content']): string {
  return typeof content === 'string' ? content : JSON.stringify(content)
}

// LangChain's own validation failure, in case its schema refuses what shallot's conversion let through.
function isInvocationError(error: unknown): error is Error {
  return error instanceof Error && ['ToolInvocationError', 'ToolInputParsingException'].includes(error.name)
}

/**
 * Turns a LangChain tool into a shallot tool: same name and description, its schema as a zod schema
 * (see {@link inputSchemaOf}). Inside `shallotMiddleware` its `execute` runs LangChain's own handler
 * for the call (so LangChain's config, state and callbacks apply); anywhere else it calls
 * `tool.invoke(args, { signal })`. A ToolMessage with `status: 'error'` becomes a soft `tool_error`.
 * `options` are what `defineTool` takes and the LangChain tool does not say: `effect` and `reconcile`;
 * any other field is refused (`OptionsError` naming it and the known ones). The tool reads the call's idempotency
 * key, attempt and signal with `getShallotCall()`.
 *
 * @example
 * const stack = createStack({ middleware: [retry()], tools: [toShallotTool(searchTool, { effect: 'read' })] })
 */
export function toShallotTool(lcTool: LangChainTool, options: ToShallotToolOptions = {}): AnyTool {
  const o = parseOptions(`toShallotTool("${lcTool.name}")`, optionsSchema, options)
  return defineTool({
    name: lcTool.name,
    description: lcTool.description,
    input: inputSchemaOf(lcTool.schema),
    effect: o.effect ?? 'write',
    reconcile: o.reconcile,
    async execute(args, { signal, idempotencyKey, attempt }) {
      const call = handlerCall.getStore()
      let value: unknown
      try {
        // The tool reads its key, attempt and signal with getShallotCall().
        value = await shallotCalls.run({ idempotencyKey, attempt, signal }, () =>
          call === undefined
            ? lcTool.invoke(args as never, { signal })
            : // This tool, with the arguments the stack validated (a person's edit included, when a policy let one
              // through): a layer may dispatch another tool than the one the model called (a fallback to a mirror).
              untilAborted(
                Promise.resolve(
                  call.handler({
                    ...call.request,
                    tool: lcTool as ToolCallRequest['tool'],
                    toolCall: { ...call.request.toolCall, name: lcTool.name, args: args as Record<string, unknown> },
                  }),
                ),
                signal,
              ),
        )
      } catch (error) {
        if (isInvocationError(error)) {
          throw new ToolError('invalid_arguments', error.message, { category: 'recoverable', safeToRepeat: true, cause: error })
        }
        throw error
      }
      if (isToolMessage(value) && value.status === 'error') {
        throw new ToolError('tool_error', contentText(value.content), { category: 'recoverable', retryable: false })
      }
      return value
    },
  }) as AnyTool
}
