import type { McpCallResult, McpClient, McpRequestOptions } from './types.js'

/**
 * Whether `client` is an SDK 2.x client, whose `callTool(params, options)` takes the request options
 * second (1.x takes a result schema second and the options third). Passing 1.x's three arguments to
 * 2.x silently drops the signal and the deadline, so this must be right: 2.x is recognised by its
 * protocol negotiation API, else by the arity of `callTool` (2 in 2.x, 1 in 1.x, whose schema has a default).
 */
export function isSdkV2(client: McpClient): boolean {
  return (
    typeof (client as { getNegotiatedProtocolVersion?: unknown }).getNegotiatedProtocolVersion === 'function' || client.callTool.length >= 2
  )
}

/** `tools/call` with the options in the place the client's SDK major expects them. */
export async function callTool(
  client: McpClient,
  params: { name: string; arguments: Record<string, unknown> },
  options: McpRequestOptions,
  v2: boolean,
): Promise<McpCallResult> {
  const call = client.callTool as (...args: unknown[]) => Promise<unknown>
  const result = v2 ? await call.call(client, params, options) : await call.call(client, params, undefined, options)
  return (typeof result === 'object' && result !== null ? result : {}) as McpCallResult
}
