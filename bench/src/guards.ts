import { coalesce } from '@shallot/coalesce'
import { createStack, defineTool } from '@shallot/core'
import { redact } from '@shallot/redact'
import { z } from 'zod'
import { distinctCall, readTool, stackOf } from './fixtures.js'
import type { Case } from './measure.js'

export const REDACT_1MB = 'shallot: redact, a 1 MB result (text, e-mails, cards, IPs, keys, pathological runs)'
export const REDACT_2MB = 'shallot: redact, a 2 MB result (the same text twice)'

/**
 * A result of about `bytes` characters in strings: prose with a planted value every ~2 KB, and the
 * runs that make a careless pattern backtrack (digits and spaces, hex and colons, a lone `sk-`, `@`).
 */
export function mixedResult(bytes: number): { records: string[] } {
  const prose = 'The order shipped on time and the customer confirmed receipt by phone. '.repeat(25)
  const planted = ['ada@example.com', '4111 1111 1111 1111', '203.0.113.9', 'sk-proj-abcdefghijklmnopqrstuvwx', 'DE89370400440532013000']
  const pathological = ['2 '.repeat(500), 'f:'.repeat(500), 'sk-'.repeat(300), 'a@'.repeat(500), 'DE89 '.repeat(200)]
  const records: string[] = []
  let size = 0
  for (let i = 0; size < bytes; i++) {
    const record = `${prose}${planted[i % planted.length]} ${pathological[i % pathological.length]}`
    records.push(record)
    size += record.length
  }
  return { records }
}

/** A read tool that answers a fixed value, behind redact(). */
function redactCase(name: string, value: unknown): Case {
  const tool = defineTool({
    name: 'report',
    description: 'A big report',
    input: z.object({ id: z.number() }),
    effect: 'read',
    execute: () => value,
  })
  const stack = createStack({ tools: [tool], middleware: [redact()], limits: { maxOutputChars: 100 } })
  return {
    name,
    fn: () =>
      stack.dispatch(distinctCall('report')).then((result) => {
        if (!result.ok || result.content.includes('ada@example.com')) throw new Error(`${name}: not redacted`)
      }),
  }
}

/**
 * 9 (continued): redact() on the happy path (a small result with nothing to find, one with a
 * value to rewrite) and on 1 MB and 2 MB results, whose ratio says the work is linear (target
 * < 2.5); coalesce() on reads that never share (its cost on every call) beside the bare stack.
 */
export function guardCases(): Case[] {
  const small = { id: 7, name: 'Ada', note: 'The order shipped on time.', tags: ['a', 'b'] }
  const finding = { ...small, email: 'ada@example.com' }
  const stack = stackOf([coalesce()], [readTool])
  return [
    redactCase('shallot: redact, a small result with nothing to find', small),
    redactCase('shallot: redact, a small result with an e-mail address', finding),
    redactCase(REDACT_1MB, mixedResult(1_000_000)),
    redactCase(REDACT_2MB, mixedResult(2_000_000)),
    { name: 'shallot: coalesce (distinct reads, nothing shared)', fn: () => stack.dispatch(distinctCall(readTool.name)) },
  ]
}
