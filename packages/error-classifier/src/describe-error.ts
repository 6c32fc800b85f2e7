import { formatPath, stripStackFrames } from '@shallot/core/kit'
import type { ErrorFacts } from './error-facts.js'
import type { ProviderFacts } from './provider-facts.js'
import { read } from './read.js'

const REASONS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
}

const MAX_ISSUES = 20

function zodText(issues: readonly unknown[], tool: string | undefined): string {
  const listed = issues.slice(0, MAX_ISSUES).map((issue) => {
    const message = read(issue, 'message')
    return `${formatPath(read(issue, 'path'))}: ${typeof message === 'string' ? message : 'invalid'}`
  })
  const more = issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more` : ''
  return `Invalid arguments${tool === undefined ? '' : ` for ${tool}`}: ${listed.join('; ')}${more}`
}

/** The first name that is not the generic `Error`, for "TypeError: …" prefixes. */
function errorName(facts: ErrorFacts): string | undefined {
  return facts.names.find((name) => name !== 'Error' && name !== 'Object')
}

/**
 * A provider SDK's error in one form for every SDK: who answered, the status and the provider's
 * own code or type, then the provider's message (not the SDK's `429 {"type":"error",…}` rendering
 * of the whole body). Without a status (a stream's error event, a connection error), the same
 * without the status; with no body either, the messages along the chain.
 */
function providerText(facts: ErrorFacts, provider: ProviderFacts, base: string): string {
  const label = provider.code ?? provider.type
  const status = facts.status === undefined ? '' : `: HTTP ${facts.status}`
  const head = `${provider.provider}${status}${label === undefined ? '' : ` (${label})`}`
  const said = provider.message ?? (facts.status === undefined ? base : (facts.statusText ?? REASONS[facts.status]))
  return said === undefined || said === '' ? head : `${head}: ${said}`
}

/**
 * Writes the message the model reads for a classified error, before sanitizing: the HTTP status
 * and reason when the error's own text lacks them, the messages along the cause chain
 * (`fetch failed: connect ECONNREFUSED …`), a ZodError's issues, or a tool panic in
 * panicCatcher's words. Stack frames are dropped.
 *
 * @example
 * describeError(errorFacts(new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 10.0.0.5:443') })), 'network_error', 'search')
 * // 'fetch failed: connect ECONNREFUSED 10.0.0.5:443'
 */
export function describeError(facts: ErrorFacts, code: string, tool: string | undefined): string {
  if (facts.issues !== undefined && facts.issues.length > 0) return zodText(facts.issues, tool)
  const base = stripStackFrames(facts.messages.join(': '))
  if (code === 'tool_panic') {
    const name = errorName(facts)
    const what = base === '' ? '(unknown payload)' : name === undefined || base.startsWith(name) ? base : `${name}: ${base}`
    return `Tool "${tool ?? 'unknown'}" panicked: ${what}`
  }
  if (facts.provider !== undefined) return providerText(facts, facts.provider, base)
  let text = base
  if (facts.status !== undefined && !text.includes(String(facts.status))) {
    const reason = facts.statusText ?? REASONS[facts.status]
    const saysReason = reason !== undefined && text.toLowerCase().includes(reason.toLowerCase())
    const head = reason === undefined || saysReason ? `HTTP ${facts.status}` : `HTTP ${facts.status} ${reason}`
    text = text === '' ? head : `${head}: ${text}`
  }
  if (facts.detail !== undefined && !text.includes(facts.detail)) text = text === '' ? facts.detail : `${text} (${facts.detail})`
  return text === '' ? (errorName(facts) ?? code) : text
}
