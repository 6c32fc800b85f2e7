import { type AnyTool, createStack, type Stack } from '@shallot/core'
import { redact } from './index.js'

/** What the model reads of customers: e-mails masked, cards and IBANs withheld, employee ids hashed, the rest redacted. */
export function supportStack(getCustomer: AnyTool, hashKey: string): Stack {
  const employeeId = { name: 'employee_id', pattern: /\bEMP-\d{6}\b/, strategy: 'hash' as const }
  return createStack({
    tools: [getCustomer],
    middleware: [redact({ strategies: { email: 'mask', card: 'block', iban: 'block' }, patterns: [employeeId], hashKey })],
  })
}
