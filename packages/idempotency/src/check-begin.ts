import type { BeginResult } from './idempotency-store.js'
import { storedResultProblem } from './stored-result.js'

const REASONS: ReadonlySet<unknown> = new Set(['recorded', 'lease_expired'])

const corrupt = (problem: string): BeginResult => ({ status: 'unknown', reason: 'corrupt', problem })

/**
 * The token of a well-formed `new` answer, or `undefined` for any other answer (which
 * {@link checkBegin} then checks): the answer nearly every write gets, read without building a
 * checked copy of it. Each field is read once, so a getter cannot answer one thing to the check and
 * another to the caller.
 *
 * @example
 * newToken({ status: 'new', token: 'm1' }) // 'm1'
 * newToken({ status: 'done', result: {} }) // undefined
 */
export function newToken(answer: unknown): string | undefined {
  if (typeof answer !== 'object' || answer === null) return undefined
  const a = answer as { status?: unknown; token?: unknown }
  if (a.status !== 'new') return undefined
  const token = a.token
  return typeof token === 'string' && token !== '' ? token : undefined
}

/**
 * What a store's `begin` answered, checked: the answer when it is a well-formed {@link BeginResult},
 * else `unknown (corrupt)` with the problem. A store that skipped validating its records (or
 * answers garbage) thus still cannot make a write replay nothing, crash, or run twice: a stored
 * result that is not `{ value?: JSON }` and a token that is not a string are corrupt answers.
 *
 * @example
 * checkBegin({ status: 'done', result: 'charged' }) // { status: 'unknown', reason: 'corrupt', problem: 'the stored result is not an object: a string' }
 */
export function checkBegin(answer: unknown): BeginResult {
  if (typeof answer !== 'object' || answer === null) return corrupt('begin() answered something that is not an object')
  const a = answer as { status?: unknown; token?: unknown; result?: unknown; reason?: unknown; problem?: unknown }
  switch (a.status) {
    case 'new':
      return typeof a.token === 'string' && a.token !== ''
        ? { status: 'new', token: a.token }
        : corrupt('begin() answered new without a token')
    case 'done': {
      const problem = storedResultProblem(a.result)
      return problem === undefined ? (answer as BeginResult) : corrupt(`the stored result is ${problem}`)
    }
    case 'in_flight':
    case 'mismatch':
      return answer as BeginResult
    case 'unknown':
      if (REASONS.has(a.reason)) return answer as BeginResult
      if (a.reason === 'corrupt')
        return corrupt(typeof a.problem === 'string' && a.problem !== '' ? a.problem : 'the store read a corrupt record')
      return corrupt(`begin() answered unknown with the reason ${JSON.stringify(a.reason)}`)
    default:
      return corrupt(`begin() answered the status ${String(JSON.stringify(a.status)).slice(0, 60)}`)
  }
}
