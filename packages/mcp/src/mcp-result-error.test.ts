import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { effectOf, indictsServer, inputSchemaFromJson, mcpResultError, mcpTransportError, resultText } from './index.js'

const site = { server: 'fs', tool: 'read_file' }
const failed = (text: string) => ({ isError: true, content: [{ type: 'text' as const, text }] })

describe('mcpResultError', () => {
  it.each([
    ['MCP error -32602: Tool wat not found', 'unknown_tool', 'recoverable'],
    ['MCP error -32602: Input validation error: Invalid arguments for tool read_file', 'invalid_arguments', 'recoverable'],
    ["ENOENT: no such file or directory, open '/srv/src/mian.rs'", 'not_found', 'recoverable'],
    ['Issue #42 does not exist', 'not_found', 'recoverable'],
    ['Access denied - path outside allowed directories: /etc/hosts not in /srv', 'permission_denied', 'recoverable'],
    ['EEXIST: file already exists', 'conflict', 'recoverable'],
    ['upstream request timed out after 30s', 'timeout', 'transient'],
    ['GitHub API rate limit exceeded', 'rate_limited', 'transient'],
    ['connect ECONNREFUSED 127.0.0.1:5432', 'network_error', 'transient'],
    ['HTTP 503 Service Unavailable', 'upstream_error', 'transient'],
    ['Could not find exact match for edit', 'tool_error', 'recoverable'],
  ])('classifies %j as %s', (text, code, category) => {
    const error = mcpResultError(failed(text), site)
    expect(error).toMatchObject({ code, category, message: text })
    expect(error.details).toEqual({ server: 'fs', tool: 'read_file', source: 'mcp_result' })
  })

  it('keeps a tool_error out of retry, and gives an empty failure a message', () => {
    expect(mcpResultError(failed('nope'), site).retryable).toBe(false)
    expect(mcpResultError({ isError: true, content: [] }, site).message).toBe('read_file failed without a message')
  })
})

describe('resultText', () => {
  it('joins text parts and names the others', () => {
    const result = {
      content: [
        { type: 'text' as const, text: 'a' },
        { type: 'image' as const, data: 'AAAA', mimeType: 'image/png' },
        { type: 'resource' as const, resource: { uri: 'file:///x', text: 'x' } },
      ],
    }
    expect(resultText(result)).toBe('a\n[image: image/png]\n[resource: file:///x]')
  })
})

describe('mcpTransportError', () => {
  it.each([
    [new McpError(-32000, 'Connection closed'), 'network_error', 'transient', false],
    [new Error('Not connected'), 'network_error', 'transient', true],
    [new McpError(-32001, 'Request timed out'), 'timeout', 'transient', false],
    [new McpError(-32602, 'Invalid arguments'), 'invalid_arguments', 'recoverable', false],
    [new McpError(-32602, "Structured content does not match the tool's output schema"), 'upstream_error', 'recoverable', false],
    [new McpError(-32601, 'Method not found'), 'protocol_error', 'fatal', false],
    [new McpError(-32603, 'Internal error'), 'upstream_error', 'transient', false],
    [new McpError(-31999, 'server-defined'), 'upstream_error', 'transient', false],
  ])('classifies %s', (thrown, code, category, safeToRepeat) => {
    expect(mcpTransportError(thrown, site)).toMatchObject({ code, category, safeToRepeat, cause: thrown })
  })

  const fetchFailed = (code: string) => new TypeError('fetch failed', { cause: Object.assign(new Error(code), { code }) })
  it.each([
    [new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'), 'network_error', 'transient', false],
    [new SdkError(SdkErrorCode.NotConnected, 'Not connected'), 'network_error', 'transient', true],
    [new SdkError(SdkErrorCode.SendFailed, 'send failed'), 'network_error', 'transient', true],
    [new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'), 'timeout', 'transient', false],
    [new SdkError(SdkErrorCode.InvalidResult, 'bad result'), 'upstream_error', 'recoverable', false],
    [new SdkError(SdkErrorCode.CapabilityNotSupported, 'no tools'), 'protocol_error', 'fatal', false],
    [
      new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, 'No valid session ID', { status: 400 } as never),
      'network_error',
      'transient',
      true,
    ],
    [new SdkHttpError(SdkErrorCode.ClientHttpAuthentication, 'HTTP 401', { status: 401 } as never), 'permission_denied', 'user', false],
    [new ProtocolError(-32603, 'Internal error'), 'upstream_error', 'transient', false],
    [new ProtocolError(-32601, 'Method not found'), 'protocol_error', 'fatal', false],
    [fetchFailed('ECONNREFUSED'), 'network_error', 'transient', true],
    [fetchFailed('ECONNRESET'), 'network_error', 'transient', false],
    [Object.assign(new Error('Streamable HTTP error: Error POSTing to endpoint'), { code: 404 }), 'network_error', 'transient', true],
    // Core's table decides a status's fate (decision 405): a 429 was refused, a 503 without Retry-After may have run.
    [Object.assign(new Error('Streamable HTTP error: Error POSTing to endpoint'), { code: 429 }), 'upstream_error', 'transient', true],
    [Object.assign(new Error('Streamable HTTP error: Error POSTing to endpoint'), { code: 503 }), 'upstream_error', 'transient', false],
  ])('classifies SDK 2.x and HTTP failures: %s', (thrown, code, category, safeToRepeat) => {
    expect(mcpTransportError(thrown, site)).toMatchObject({ code, category, safeToRepeat, cause: thrown })
  })

  it('leaves what it does not recognise to the stack', () => {
    expect(mcpTransportError(new TypeError('x is undefined'), site)).toBeUndefined()
    expect(mcpTransportError('boom', site)).toBeUndefined()
  })
})

describe('indictsServer', () => {
  it('indicts the server for transport failures only, never for isError results or the model’s mistakes', () => {
    expect(indictsServer(mcpTransportError(new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'), site))).toBe(true)
    expect(indictsServer(mcpTransportError(new McpError(-32001, 'Request timed out'), site))).toBe(true)
    expect(indictsServer(mcpTransportError(new McpError(-32601, 'Method not found'), site))).toBe(true)
    expect(indictsServer(mcpResultError(failed('HTTP 503 Service Unavailable'), site))).toBe(false)
    expect(indictsServer(mcpTransportError(new McpError(-32602, 'Invalid arguments'), site))).toBe(false)
    expect(indictsServer(new ToolError('timeout', 'a timeout() layer fired'))).toBe(false)
    expect(indictsServer(new Error('not a ToolError'))).toBe(false)
  })
})

describe('effectOf', () => {
  it('reads readOnlyHint, then idempotentHint, and defaults to write', () => {
    expect(effectOf({ readOnlyHint: true, idempotentHint: false })).toBe('read')
    expect(effectOf({ readOnlyHint: false, idempotentHint: true })).toBe('idempotent')
    expect(effectOf({ destructiveHint: true })).toBe('write')
    expect(effectOf(undefined)).toBe('write')
  })
})

describe('inputSchemaFromJson', () => {
  it('validates with the JSON Schema, defaults included', () => {
    const schema = inputSchemaFromJson({
      type: 'object',
      properties: { path: { type: 'string' }, sortBy: { type: 'string', enum: ['name', 'size'], default: 'name' } },
      required: ['path'],
      additionalProperties: false,
    })
    expect(schema.parse({ path: 'a' })).toEqual({ path: 'a', sortBy: 'name' })
    expect(schema.safeParse({ path: 'a', extra: 1 }).success).toBe(false)
    expect(schema.safeParse({ sortBy: 'size' }).success).toBe(false)
  })

  it('falls back to any JSON object for what zod cannot convert', () => {
    const conditional = inputSchemaFromJson({ type: 'object', dependentRequired: { a: ['b'] } })
    expect(conditional.safeParse({ a: 1 }).success).toBe(true)
    expect(conditional.safeParse('not an object').success).toBe(false)
    expect(
      inputSchemaFromJson({ type: 'object', properties: { a: { $ref: 'https://example.com/a.json' } } }).safeParse({ a: 1 }).success,
    ).toBe(true)
  })
})
