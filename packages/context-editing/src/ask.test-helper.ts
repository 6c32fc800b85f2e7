// Runs one model call through a model layer as a host does: a ModelContext of its own, the layer, and a terminal
// that records every request it is asked and answers with the test's model. Not part of the package.

import type { AgentEvent } from '@shallot/agent'
import {
  compose,
  createRun,
  LoopError,
  type Message,
  type ModelCallRequest,
  type ModelContext,
  type ModelMiddleware,
  type ModelResponse,
  type RunContext,
  silentLogger,
  systemClock,
} from '@shallot/core'

export interface Asked {
  /** Every request the terminal was asked, in order. */
  readonly requests: ModelCallRequest[]
  readonly events: Array<Record<string, unknown>>
  readonly attempts: number[]
  /** `ctx.attempt` once the layer returned. */
  readonly finalAttempt: number
  /** The request the context held once the layer returned. */
  readonly after: ModelCallRequest
  readonly outcome: { readonly response?: ModelResponse; readonly error?: unknown }
}

/** The provider's refusal as error-classifier or aiSdkModel hand it on. */
export const tooLong = () =>
  new LoopError('context_exceeded', "the request does not fit the model's context window (400 context_length_exceeded)", {
    details: { status: 400, code: 'context_length_exceeded' },
  })

export async function ask(
  layer: { readonly wrapModelCall: ModelMiddleware },
  messages: readonly Message[],
  model: (request: ModelCallRequest, asked: number) => ModelResponse | Promise<ModelResponse>,
  extra: {
    readonly signal?: AbortSignal
    readonly name?: string
    readonly run?: RunContext
    readonly emit?: (event: AgentEvent) => void
  } = {},
): Promise<Asked> {
  const requests: ModelCallRequest[] = []
  const events: Array<Record<string, unknown>> = []
  const attempts: number[] = []
  const request: ModelCallRequest = { messages, tools: [] }
  const ctx: ModelContext = {
    run: extra.run ?? createRun({ id: 'run-1' }),
    turn: 1,
    model: { name: extra.name ?? 'demo', adapter: { generate: async () => ({ text: '' }) } },
    request,
    signal: extra.signal ?? new AbortController().signal,
    attempt: 1,
    log: silentLogger,
    clock: systemClock,
    random: Math.random,
    stackKey: {},
    emit: extra.emit ?? ((event: AgentEvent) => void events.push(event as unknown as Record<string, unknown>)),
  }
  const terminal = async () => {
    requests.push(ctx.request)
    attempts.push(ctx.attempt)
    ctx.response = await model(ctx.request, requests.length)
  }
  const outcome: { response?: ModelResponse; error?: unknown } = {}
  try {
    await compose([layer.wrapModelCall])(ctx, terminal)
    if (ctx.response !== undefined) outcome.response = ctx.response
  } catch (err) {
    outcome.error = err
  }
  return { requests, events, attempts, finalAttempt: ctx.attempt, after: ctx.request, outcome }
}

/** A tool turn: an assistant message with these calls, then their results (content `result of <id>`). */
export function turn(...ids: string[]): Message[] {
  return [
    { role: 'assistant', toolCalls: ids.map((id) => ({ id, name: 'read', args: { id } })) },
    ...ids.map((id): Message => ({ role: 'tool', callId: id, name: 'read', content: `result of ${id}`, ok: true })),
  ]
}

/** Freezes a conversation deeply, so a test fails the moment anything writes to it. */
export function frozen<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) frozen(inner)
    Object.freeze(value)
  }
  return value
}
