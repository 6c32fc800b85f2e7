/**
 * The model endpoint: `fakeProvider` from @shallot/testing (a real HTTP server speaking OpenAI Chat,
 * OpenAI Responses and Anthropic Messages), with one step function that hands each request to its
 * episode's brain, picked by the model name the contender asked for.
 */
import { type FakeProvider, type FakeRequest, type FakeTurn, fakeProvider } from '@shallot/testing'
import { think } from './brain.js'
import { conversationOf } from './conversation.js'
import type { Task } from './tasks.js'
import type { World } from './world.js'

export interface EpisodeModel {
  readonly task: Task
  readonly world: World
}

export interface Endpoint {
  readonly url: string
  register(model: string, episode: EpisodeModel): void
  forget(model: string): void
  close(): Promise<void>
}

function answer(episode: EpisodeModel, request: FakeRequest): FakeTurn {
  const { world, task } = episode
  const { k, fault, retryAfterSeconds } = world.nextModelFault()
  if (fault === 'model_429') {
    world.note(`model #${k} ← fault model_429 (Retry-After: 1)`)
    return { fault: 'rate_limit', retryAfterSeconds: 1 }
  }
  if (fault === 'model_429_ra120') {
    world.note(`model #${k} ← fault model_429 (Retry-After: ${retryAfterSeconds ?? 120})`)
    return { fault: 'rate_limit', retryAfterSeconds: retryAfterSeconds ?? 120 }
  }
  if (fault === 'model_503') {
    world.note(`model #${k} ← fault model_503`)
    return { fault: 'overloaded', status: 503 }
  }
  const conversation = conversationOf(request.api, request.body)
  const last = conversation.exchanges.at(-1)
  if (last !== undefined) world.note(`model #${k} reads ${last.name}: ${(last.result ?? '(no result)').replace(/\s+/g, ' ').slice(0, 160)}`)
  const turn = think(task, conversation)
  if (turn.kind === 'answer') {
    world.note(`model #${k} → answer "${turn.text}"`)
    return { text: turn.text }
  }
  if (fault === 'malformed_json') {
    const rawArgs = JSON.stringify(turn.args).slice(0, -4)
    world.note(`model #${k} → ${turn.name} with malformed JSON ${rawArgs} ← fault malformed_json`)
    return { toolCalls: [{ id: turn.id, name: turn.name, rawArgs }] }
  }
  world.note(`model #${k} → call ${turn.name}`)
  return { toolCalls: [{ id: turn.id, name: turn.name, args: turn.args }] }
}

export async function startEndpoint(): Promise<Endpoint> {
  const episodes = new Map<string, EpisodeModel>()
  const server: FakeProvider = await fakeProvider({
    onEnd: 'repeat',
    now: () => Date.now(),
    script: [
      (request) => {
        const episode = request.model === undefined ? undefined : episodes.get(request.model)
        if (episode === undefined) return { fault: 'http', status: 404, body: { error: { message: `no episode ${request.model}` } } }
        return answer(episode, request)
      },
    ],
  })
  return {
    url: server.url,
    register: (model, episode) => episodes.set(model, episode),
    forget: (model) => {
      episodes.delete(model)
      // The provider records every request; nothing here reads old ones, and thousands of episodes would pile up.
      ;(server.requests as FakeRequest[]).length = 0
    },
    close: () => server.close(),
  }
}
