/**
 * One episode: a task, a fault schedule and a contender, driven in virtual time until it answers,
 * stops, throws, or passes the cap. The world's ledger then says what really happened.
 */
import { LoopError } from 'shallot'
import { DONE } from './brain.js'
import type { Contender, RunEnd } from './contenders/contender.js'
import type { Endpoint } from './endpoint.js'
import type { FaultSchedule } from './faults.js'
import type { Task } from './tasks.js'
import { clock, drive } from './virtual-time.js'
import { type TraceLine, World } from './world.js'

/** A run still going after this much virtual time is hung. */
export const HUNG_CAP_MS = 10 * 60_000

export type EpisodeStatus = 'success' | 'failed' | 'stopped' | 'crashed' | 'hung'

export interface EpisodeResult {
  readonly contender: string
  readonly task: string
  readonly status: EpisodeStatus
  /** Success with no write landing twice. */
  readonly clean: boolean
  readonly duplicates: number
  readonly effects: number
  readonly toolExecutions: number
  readonly modelRequests: number
  readonly virtualMs: number
  readonly detail: string
  readonly trace: readonly TraceLine[]
}

let episodeCounter = 0

function loopErrorIn(error: unknown): LoopError | undefined {
  for (let node = error, depth = 0; node !== undefined && node !== null && depth < 8; depth++) {
    if (LoopError.is(node)) return node
    node = (node as { cause?: unknown }).cause
  }
  return undefined
}

function describe(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  return text.split('\n')[0]?.slice(0, 200) ?? ''
}

export async function runEpisode(endpoint: Endpoint, contender: Contender, task: Task, schedule: FaultSchedule): Promise<EpisodeResult> {
  const startedAt = clock.now
  const world = new World(schedule, () => Math.round(clock.now - startedAt))
  const model = `ep-${++episodeCounter}`
  const controller = new AbortController()
  endpoint.register(model, { task, world })
  const setup = { task, tools: task.tools(world), model, url: endpoint.url, signal: controller.signal }
  const driven = await drive<RunEnd>(
    () => contender.run(setup),
    HUNG_CAP_MS,
    () => controller.abort(new Error('the bench declared the run hung')),
  )
  endpoint.forget(model)
  const expectedWrites = new Set(
    task.plan.filter((step) => setup.tools.find((t) => t.name === step.tools[0])?.effect === 'write').map((s) => s.tools[0]),
  )
  const landed = new Set(world.ledger.map((entry) => entry.tool))
  const allWritesLanded = [...expectedWrites].every((name) => landed.has(name as string))
  let status: EpisodeStatus
  let detail: string
  if (!driven.settled) {
    status = 'hung'
    detail = `still running after ${HUNG_CAP_MS / 1000} s of virtual time`
  } else if (driven.error !== undefined) {
    const hard = loopErrorIn(driven.error)
    status = hard === undefined ? 'crashed' : 'stopped'
    detail = hard === undefined ? describe(driven.error) : `LoopError ${hard.kind}`
  } else {
    const end = driven.value as RunEnd
    if (end.kind === 'stopped') {
      status = 'stopped'
      detail = end.reason
    } else {
      status = end.text.startsWith(DONE) && allWritesLanded ? 'success' : 'failed'
      detail = end.text.slice(0, 200)
    }
  }
  world.note(`end: ${status} (${detail})`)
  const duplicates = world.duplicates()
  return {
    contender: contender.id,
    task: task.id,
    status,
    clean: status === 'success' && duplicates === 0,
    duplicates,
    effects: world.ledger.length,
    toolExecutions: world.executions,
    modelRequests: world.modelRequests,
    virtualMs: driven.elapsedMs,
    detail,
    trace: world.trace,
  }
}
