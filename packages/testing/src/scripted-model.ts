import type { Message, ModelAdapter, ModelRequest, ModelResponse, ModelTool } from '@shallot/core'

/** A tool call in a script; `id` is filled in (`call_<turn>_<n>`) when left out. */
export interface ScriptedCall {
  id?: string
  name: string
  args: unknown
}

export interface ScriptedTurn {
  text?: string
  toolCalls?: readonly ScriptedCall[]
}

/** What a function step sees: the transcript so far, the tools offered, and the latest tool results. */
export interface ScriptContext {
  readonly turn: number
  readonly messages: readonly Message[]
  readonly tools: readonly ModelTool[]
  /** The tool messages of the previous turn, in call order. */
  readonly lastResults: ReadonlyArray<Extract<Message, { role: 'tool' }>>
  readonly signal: AbortSignal
}

export type ScriptStep = ScriptedTurn | ((context: ScriptContext) => ScriptedTurn | Promise<ScriptedTurn>)

export interface ScriptedModel extends ModelAdapter {
  /** Every request the model received, in order. */
  readonly requests: readonly Omit<ModelRequest, 'signal'>[]
}

export interface ScriptedModelOptions {
  /** When the script runs out: repeat the last step (`'repeat'`), or fail the model call (`'fail'`, the default). */
  onEnd?: 'repeat' | 'fail'
}

function lastToolResults(messages: readonly Message[]): Array<Extract<Message, { role: 'tool' }>> {
  const results: Array<Extract<Message, { role: 'tool' }>> = []
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as Message
    if (message.role !== 'tool') break
    results.unshift(message)
  }
  return results
}

/**
 * A model that plays a script: each step is a fixed turn, or a function of the transcript so it can
 * react to a soft error (fix a mistyped path after `not_found`). A step without tool calls ends the run.
 *
 * @example
 * const model = scriptedModel([
 *   { toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
 *   ({ lastResults }) => lastResults[0]?.ok ? { text: 'done' } : { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] },
 *   { text: 'The file defines main().' },
 * ])
 */
export function scriptedModel(steps: readonly ScriptStep[], options: ScriptedModelOptions = {}): ScriptedModel {
  if (!Array.isArray(steps) || steps.length === 0)
    throw new TypeError('scriptedModel(): steps must be a non-empty array of turns or functions')
  const requests: Array<Omit<ModelRequest, 'signal'>> = []
  let index = 0
  return {
    requests,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      requests.push({ messages: [...request.messages], tools: request.tools })
      if (index >= steps.length && options.onEnd !== 'repeat') {
        throw new TypeError(`scriptedModel: the script has ${steps.length} steps and the agent asked for turn ${index + 1}`)
      }
      const step = steps[Math.min(index, steps.length - 1)] as ScriptStep
      index++
      const turn = index
      const planned =
        typeof step === 'function'
          ? await step({
              turn,
              messages: request.messages,
              tools: request.tools,
              lastResults: lastToolResults(request.messages),
              signal: request.signal,
            })
          : step
      const toolCalls = (planned.toolCalls ?? []).map((call, n) => ({
        id: call.id ?? `call_${turn}_${n + 1}`,
        name: call.name,
        args: call.args,
      }))
      return planned.text === undefined ? { toolCalls } : { text: planned.text, toolCalls }
    },
  }
}
