import type { PendingCall } from '@shallot/agent'
import type { ApprovalAnswer, Json } from '@shallot/core'
import { UsageError } from '../usage.js'

interface ApprovalFlags {
  readonly approve?: readonly string[] | undefined
  readonly deny?: readonly string[] | undefined
  readonly edit?: readonly string[] | undefined
}

/** `id=rest` split at the first `=`; an id cannot be empty. */
function split(flag: string, value: string, example: string): [string, string | undefined] {
  const at = value.indexOf('=')
  const callId = at === -1 ? value : value.slice(0, at)
  if (callId.trim() === '') throw new UsageError(`--${flag} needs a call id: ${example}`)
  return [callId, at === -1 ? undefined : value.slice(at + 1)]
}

/**
 * The answers given on `shallot resume`'s command line: `--approve <callId>`,
 * `--deny <callId>[=<reason>]`, `--edit '<callId>=<arguments as JSON>'`. Undefined when none is
 * given; one call answered twice is a usage error.
 *
 * @example
 * approvalsOfFlags({ approve: ['call_1'], edit: ['call_2={"path":"a.txt"}'] })
 */
export function approvalsOfFlags(flags: ApprovalFlags): Record<string, ApprovalAnswer> | undefined {
  const answers: Record<string, ApprovalAnswer> = {}
  let count = 0
  const put = (callId: string, answer: ApprovalAnswer) => {
    if (Object.hasOwn(answers, callId))
      throw new UsageError(`call "${callId.slice(0, 60)}" is answered twice; give it one of --approve, --deny, --edit`)
    // A call id is the model's text: `__proto__` must be a key like any other.
    Object.defineProperty(answers, callId, { value: answer, enumerable: true, writable: true, configurable: true })
    count++
  }
  for (const value of flags.approve ?? []) put(split('approve', value, '--approve call_1')[0], 'approve')
  for (const value of flags.deny ?? []) {
    const [callId, reason] = split('deny', value, "--deny call_1 or --deny 'call_1=not this month'")
    put(callId, reason === undefined || reason.trim() === '' ? 'deny' : { deny: reason.slice(0, 1000) })
  }
  for (const value of flags.edit ?? []) {
    const example = `--edit 'call_1={"path":"notes.txt"}'`
    const [callId, text] = split('edit', value, example)
    if (text === undefined) throw new UsageError(`--edit ${callId.slice(0, 60)} needs the arguments after "=": ${example}`)
    let args: Json
    try {
      args = JSON.parse(text) as Json
    } catch (err) {
      throw new UsageError(
        `--edit ${callId.slice(0, 60)}: the arguments are not JSON (${err instanceof Error ? err.message.slice(0, 120) : 'unreadable'}): ${example}`,
      )
    }
    put(callId, { args })
  }
  return count === 0 ? undefined : answers
}

/** The flags that answer every pending call one way, and the other ways to answer the first. */
export function approvalHint(pending: readonly PendingCall[], quote: (s: string) => string): { approveAll: string; others: string } {
  const approveAll = pending.map((p) => `--approve ${quote(p.callId)}`).join(' ')
  const first = pending[0]?.callId ?? 'call_1'
  return { approveAll, others: `or --deny ${quote(first)}, or --edit ${quote(`${first}=<arguments as JSON>`)}, per call` }
}
