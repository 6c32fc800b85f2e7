// Helpers of model-onion.hostile.test.ts: scripted and stalling model adapters, and an event recorder.

import type { AgentEvent } from '@shallot/agent'
import type { ModelAdapter, ModelRequest, ModelResponse } from '@shallot/core'

/** A final answer with token usage, so a counted (or wrongly counted) call shows in `outcome.usage`. */
export const answer = (text = 'done', tokens = 10): ModelResponse => ({
  text,
  usage: { inputTokens: tokens, outputTokens: tokens },
  finishReason: 'stop',
})

/** A provider failure core calls transient (503), as an SDK throws it. */
export const unavailable = () => Object.assign(new Error('Service Unavailable'), { status: 503 })

/** A model that answers `steps` in order (the last repeats); an Error step is thrown. */
export function scripted(name: string, steps: (ModelResponse | Error)[]): ModelAdapter & { calls: number } {
  const adapter = {
    name,
    calls: 0,
    async generate(): Promise<ModelResponse> {
      const step = steps[Math.min(adapter.calls++, steps.length - 1)] as ModelResponse | Error
      if (step instanceof Error) throw step
      return step
    },
  }
  return adapter
}

/**
 * A model that never settles on its own: each request is held until the test answers it.
 * `readSignal` decides whether the adapter looks at `request.signal` at all (many SDK wrappers do not).
 */
export function stalling(
  name: string,
  readSignal: boolean,
): ModelAdapter & { held: { request: ModelRequest; answer(r: ModelResponse): void; aborted: () => boolean }[] } {
  const held: { request: ModelRequest; answer(r: ModelResponse): void; aborted: () => boolean }[] = []
  return {
    name,
    held,
    generate(request) {
      return new Promise<ModelResponse>((resolve) => {
        const signal = readSignal ? request.signal : undefined
        held.push({ request, answer: resolve, aborted: () => signal?.aborted === true })
      })
    },
  }
}

/** Records every agent event; `after(type)` is what came after the first event of that type. */
export function recorder() {
  const events: AgentEvent[] = []
  const onEvent = (event: AgentEvent) => {
    events.push(event)
  }
  const types = () => events.map((e) => e.type)
  return { events, onEvent, types }
}

/** Lets every pending reaction and I/O callback of the moment run (no timers: nothing waits for real). */
export async function settle(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    for (let j = 0; j < 20; j++) await Promise.resolve()
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
}
