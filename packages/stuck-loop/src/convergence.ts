import { type CompletedTurn, type Json, LoopError, type RunContext, type TurnEnv } from '@shallot/core'
import { canonicalJson } from '@shallot/core/kit'
import { z } from 'zod'
import { jaccard, shingles } from './text-similarity.js'

/** Options of convergence detection: `stuckLoop({ convergence: { … } })`. */
export const convergenceOptionsSchema = z.strictObject({
  /** Jaccard similarity (0–1] of two turns' normalized text at which they count as near-identical. Default 0.9. */
  similarity: z.number().gt(0).max(1).default(0.9),
  /** Near-identical turns in a row, the first included, at which the run ends. Default 3. */
  after: z.number().int().min(2).max(100).default(3),
  /** Earlier turns a turn is compared with (catches A, B, A, B as well as A, A, A). Default 3. */
  window: z.number().int().min(1).max(20).default(3),
  /** Characters of each compared text (the reply with its calls; the results) that count. Default 2000. */
  maxChars: z.number().int().min(50).max(20_000).default(2000),
  /** `'stop'`: end the run with `loop_detected`; `'ask'`: end it with `user_input_required`, for a person to redirect. Default `'stop'`. */
  action: z.enum(['stop', 'ask']).default('stop'),
})

export type ConvergenceOptions = z.input<typeof convergenceOptionsSchema>
type Limits = z.output<typeof convergenceOptionsSchema>

/** The key of `run.state` under which convergence keeps the turns it compares. */
export const CONVERGENCE_STATE_KEY = 'shallot.stuck-loop.convergence'

/** One remembered turn: its number and the shingles of what the model said and of what the world answered. */
type Seen = { turn: number; said: number[]; heard: number[] }
type Memory = { streak: number; turns: Seen[] }

const isShingles = (v: Json | undefined): v is number[] =>
  Array.isArray(v) && v.every((n) => typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 0xffffffff)
const isSeen = (v: Json): v is Seen =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Number.isInteger(v.turn) && isShingles(v.said) && isShingles(v.heard)

// A memory that is not one this layer wrote (a corrupt or foreign checkpoint) is forgotten: the
// count starts again, which can only delay a stop, never cause one.
function memoryOf(state: Record<string, Json>): Memory {
  const value = state[CONVERGENCE_STATE_KEY]
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const { streak, turns } = value
    if (Number.isInteger(streak) && (streak as number) >= 0 && Array.isArray(turns) && turns.every(isSeen)) {
      return { streak: streak as number, turns: turns as Seen[] }
    }
  }
  return { streak: 0, turns: [] }
}

// Joins the parts up to `limit` characters, so a turn of many huge results costs no more than one.
function joinCapped(parts: Iterable<string>, limit: number): string {
  let text = ''
  for (const part of parts) {
    text += text === '' ? part : `\n${part}`
    if (text.length >= limit) return text.slice(0, limit)
  }
  return text
}

function* saidParts(turn: CompletedTurn): Iterable<string> {
  yield turn.text ?? ''
  for (const c of turn.calls) yield `${c.name} ${canonicalOrRaw(c.args)}`
}

function* heardParts(turn: CompletedTurn): Iterable<string> {
  for (const r of turn.results) yield `${r.name} ${r.ok ? 'ok' : 'failed'} ${r.content}`
}

function canonicalOrRaw(args: unknown): string {
  try {
    return canonicalJson(args)
  } catch {
    return ''
  }
}

/**
 * Watches the turns of a run for a model that keeps saying the same thing and hearing the same
 * answer: each turn's reply (text and tool calls) and results are normalized and compared with
 * the last `window` turns by Jaccard similarity of words and word pairs. A turn is a repeat when
 * both its reply and its results reach `similarity` with one of those turns; `after` turns in a row
 * (the first included) end the run.
 *
 * @example
 * const watch = convergence({ similarity: 0.9, after: 3 })
 * watch(turn, run, env) // throws LoopError('loop_detected') on the third near-identical turn
 */
export function convergence(options: Limits): (turn: CompletedTurn, run: RunContext, env: TurnEnv) => void {
  const { similarity, after, window, maxChars, action } = options
  return function observeConvergence(turn, run, env) {
    const memory = memoryOf(run.state)
    // normalizeText looks at most at 4 × maxChars raw characters (invisible ones are dropped first).
    const raw = maxChars * 4
    const said = shingles(joinCapped(saidParts(turn), raw), maxChars)
    const seen: Seen = { turn: turn.turn, said, heard: shingles(joinCapped(heardParts(turn), raw), maxChars) }
    let best = 0
    let like: Seen | undefined
    for (const earlier of memory.turns) {
      const score = Math.min(jaccard(seen.said, earlier.said), jaccard(seen.heard, earlier.heard))
      if (score >= best) {
        best = score
        like = earlier
      }
    }
    const repeat = like !== undefined && best >= similarity
    const streak = repeat ? memory.streak + 1 : 0
    const turns = [...memory.turns, seen].slice(-window)
    run.state[CONVERGENCE_STATE_KEY] = { streak, turns }
    if (!repeat) return
    const fields = { turn: turn.turn, like: like?.turn, similarity: round(best), repeats: streak + 1, after }
    if (streak + 1 < after) {
      env.emit('stuck-loop.converging', fields)
      return
    }
    env.emit('stuck-loop.converged', { ...fields, action })
    env.log.warn({ ...fields, runId: run.id, action }, 'stuck-loop stopped the run: the model keeps giving near-identical replies')
    throw converged(turn.turn, streak + 1, best, similarity, action)
  }
}

const round = (n: number) => Math.round(n * 1000) / 1000

function converged(turn: number, repeats: number, score: number, threshold: number, action: Limits['action']): LoopError {
  const failure = `the model gave ${repeats} near-identical replies in a row (similarity ${round(score)} >= ${threshold}) and got the same results, without progress`
  const details = { reason: 'converged', turn, repeats, similarity: round(score), failure }
  if (action === 'ask') {
    return new LoopError('user_input_required', `${failure}; a person should redirect the task`, { details })
  }
  return new LoopError('loop_detected', `${failure}; the model is not adapting`, { details })
}

/**
 * Forgets the turns convergence compared, e.g. before resuming a run a person redirected.
 *
 * @example
 * resetConvergence(checkpoint.state)
 */
export function resetConvergence(state: Record<string, Json>): void {
  delete state[CONVERGENCE_STATE_KEY]
}
