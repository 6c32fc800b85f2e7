import { ToolMessage } from '@langchain/core/messages'
import type { AnyTool, Stack } from '@shallot/core'
import { stackFromSource } from '@shallot/core/kit'
import type { ToolCallRequest } from 'langchain'
import type { z } from 'zod'
import type { HandlerResult } from './handler-call.js'
import type { shallotMiddlewareOptionsSchema } from './shallot-middleware-options.js'
import { type LangChainTool, toShallotTool } from './to-shallot-tool.js'

const isObject = (v: unknown) => typeof v === 'object' && v !== null

/** A message's text parts as the model may read them (`stack.modelText`); other parts as they are. */
function checkedContent(stack: Stack, content: ToolMessage['content']): ToolMessage['content'] {
  if (typeof content === 'string') return stack.modelText(content)
  if (!Array.isArray(content)) return content
  return content.map((part) =>
    isObject(part) && (part as { type?: unknown }).type === 'text' && typeof (part as { text?: unknown }).text === 'string'
      ? { ...part, text: stack.modelText((part as { text: string }).text) }
      : part,
  ) as ToolMessage['content']
}

/** The tool message the model reads of a successful call: its text is the stack's, as `createAgent` sends it. */
export function toolMessageOf(value: unknown, request: ToolCallRequest, stack: Stack): HandlerResult {
  const { id, name } = request.toolCall
  const callId = id ?? ''
  if (ToolMessage.isInstance(value)) {
    // Rebuilt with the text the stack checked, and this call's id: a replayed result (idempotency) carries the
    // tool_call_id of the call that first produced it.
    return new ToolMessage({
      content: checkedContent(stack, value.content),
      tool_call_id: callId,
      name,
      status: value.status ?? 'success',
      artifact: value.artifact,
    })
  }
  if (isObject(value) && (value as { lg_name?: unknown }).lg_name === 'Command') return value as HandlerResult
  const content = stack.modelText(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''))
  return new ToolMessage({ content, tool_call_id: callId, name })
}

/**
 * The stack of the tools the agent has shown so far: `register` adds a LangChain tool (the stack is rebuilt on
 * next use when one is new), `stack()` is the ready stack given, or the one built from the options.
 */
export function toolStack(o: z.output<typeof shallotMiddlewareOptionsSchema>): { register(source: LangChainTool): void; stack(): Stack } {
  const registry = new Map<string, { source: LangChainTool; tool: AnyTool }>()
  let built: Stack | undefined = o.stack
  return {
    register(source) {
      if (o.stack !== undefined || registry.get(source.name)?.source === source) return
      const effect = o.effects[source.name]
      const reconcile = o.reconcile[source.name]
      const options = { ...(effect === undefined ? {} : { effect }), ...(reconcile === undefined ? {} : { reconcile }) }
      registry.set(source.name, { source, tool: toShallotTool(source, options) })
      built = undefined
    },
    stack() {
      if (built !== undefined) return built
      const next = stackFromSource(
        o,
        [...registry.values()].map((entry) => entry.tool),
      )
      if (o.onEvent !== undefined) next.on(o.onEvent)
      built = next
      return next
    },
  }
}
