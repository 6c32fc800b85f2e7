import type { ToolContext } from '@shallot/core'
import { ToolError } from '@shallot/core'

const WHAT: Readonly<Record<string, string>> = {
  email: 'an e-mail address',
  card: 'a card number',
  iban: 'an IBAN',
  ip: 'an IP address',
  api_key: 'an API key',
  secret: 'a secret',
  too_large: 'more text than the redaction layer reads',
  unreadable: 'a value that could not be read',
}

const describe = (name: string) => (Object.hasOwn(WHAT, name) ? (WHAT[name] as string) : `a value matching '${name}'`)

function list(items: readonly string[]): string {
  if (items.length <= 1) return items.join('')
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`
}

/**
 * The soft answer to a result the layer withholds: it names what was found (the detector), never
 * the value. The tool ran: for a `read` repeating it is harmless but pointless (`safeToRepeat`,
 * not `retryable`: the same result meets the same rule); for a write its effect stands.
 *
 * @example
 * blockedByPolicy(ctx, ['card']).message // "the result of 'get_customer' was withheld: it holds a card number, which this agent may not read"
 */
export function blockedByPolicy(ctx: ToolContext, detectors: readonly string[]): ToolError {
  const tool = ctx.call.name
  const read = ctx.tool?.effect === 'read'
  return new ToolError(
    'blocked_by_policy',
    `the result of '${tool}' was withheld: it holds ${list(detectors.map(describe))}, which this agent may not read`,
    {
      category: 'recoverable',
      retryable: false,
      safeToRepeat: read,
      hint: read
        ? 'the call ran but its result is not shown to you; repeating it gives the same answer. Ask for other fields, a count or a summary, or tell the user'
        : 'the call ran and its effect stands, do not repeat it; only its result is not shown to you',
      details: { detectors: detectors.join(',') },
    },
  )
}
