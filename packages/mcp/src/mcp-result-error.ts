import { type ErrorCategory, ToolError, type ToolErrorCode } from '@shallot/core'
import type { McpCallResult, McpCallSite } from './types.js'

interface ResultRule {
  readonly test: RegExp
  readonly code: ToolErrorCode
  readonly category: ErrorCategory
  readonly hint?: string
}

// Order matters: the first match wins. Patterns cover the wording of common servers (Node errno
// names, the SDK's own "MCP error -32602" input validation, HTTP-ish phrases).
const RULES: readonly ResultRule[] = [
  { test: /\bTool \S+ not found\b/i, code: 'unknown_tool', category: 'recoverable', hint: 'call one of the listed tools' },
  {
    test: /MCP error -32602|\binvalid (arguments|params|input)\b|\binput validation\b/i,
    code: 'invalid_arguments',
    category: 'recoverable',
    hint: "fix the arguments to match the tool's schema",
  },
  {
    test: /\bENOENT\b|\bno such file\b|\bnot found\b|\bdoes not exist\b|\bdoesn't exist\b/i,
    code: 'not_found',
    category: 'recoverable',
    hint: 'check the name or path; list what exists first',
  },
  {
    test: /\bEACCES\b|\bEPERM\b|\baccess denied\b|\bpermission denied\b|\bforbidden\b|\bnot allowed\b|\boutside allowed\b/i,
    code: 'permission_denied',
    category: 'recoverable',
    hint: 'this is outside what the server allows; stay within its allowed scope',
  },
  { test: /\bEEXIST\b|\balready exists\b/i, code: 'conflict', category: 'recoverable', hint: 'it already exists; read it first' },
  { test: /\bETIMEDOUT\b|\btimed? ?out\b/i, code: 'timeout', category: 'transient' },
  { test: /\brate.?limit|\btoo many requests\b|\b429\b/i, code: 'rate_limited', category: 'transient' },
  {
    test: /\bECONNREFUSED\b|\bECONNRESET\b|\bENOTFOUND\b|\bEAI_AGAIN\b|\bsocket hang up\b|\bnetwork (error|unreachable)\b/i,
    code: 'network_error',
    category: 'transient',
  },
  {
    test: /\b50[0234]\b|\binternal server error\b|\bservice unavailable\b|\bbad gateway\b|\btemporarily unavailable\b/i,
    code: 'upstream_error',
    category: 'transient',
  },
]

/** The text parts of a result, joined; what the model would have read. */
export function resultText(result: McpCallResult): string {
  const content = (result as { content?: unknown }).content
  if (!Array.isArray(content)) return JSON.stringify((result as { toolResult?: unknown }).toolResult ?? null) ?? ''
  return content
    .map((part: { type?: string; text?: string; mimeType?: string; resource?: { uri?: string } }) => {
      if (part.type === 'text') return part.text ?? ''
      if (part.type === 'resource' || part.type === 'resource_link') return `[resource: ${part.resource?.uri ?? ''}]`
      return `[${part.type ?? 'content'}${part.mimeType === undefined ? '' : `: ${part.mimeType}`}]`
    })
    .join('\n')
}

/**
 * The soft error for a result with `isError: true`: the server's text as the message (it was written
 * for the model), classified by what it says. Recognised: `unknown_tool`, `invalid_arguments`,
 * `not_found`, `permission_denied`, `conflict` (all `recoverable`: the model can change its call),
 * `timeout`, `rate_limited`, `network_error`, `upstream_error` (`transient`: retry and the breaker
 * see them). Anything else is `tool_error`, `recoverable` and not retryable: the tool ran and said no.
 *
 * @example
 * mcpResultError({ isError: true, content: [{ type: 'text', text: 'ENOENT: no such file' }] }, { server: 'fs', tool: 'read_file' }).code // 'not_found'
 */
export function mcpResultError(result: McpCallResult, site: McpCallSite): ToolError {
  const text = resultText(result).trim() || `${site.tool} failed without a message`
  const rule = RULES.find((r) => r.test.test(text))
  const details = { server: site.server, tool: site.tool, source: 'mcp_result' }
  if (rule === undefined) return new ToolError('tool_error', text, { category: 'recoverable', retryable: false, details })
  return new ToolError(rule.code, text, {
    category: rule.category,
    ...(rule.hint === undefined ? {} : { hint: rule.hint }),
    details,
  })
}
