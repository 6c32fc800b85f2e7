import type { ToolEffect } from '@shallot/core'
import type { McpToolDescription } from './types.js'

/**
 * A tool's effect from its MCP annotations: `readOnlyHint` → `read`, `idempotentHint` → `idempotent`,
 * anything else → `write` (the spec's own defaults: not read-only, not idempotent). The annotations
 * are the server's claims; override them with `mcpTools({ effects })` for a server you do not trust.
 *
 * @example
 * effectOf({ readOnlyHint: true }) // 'read'
 */
export function effectOf(annotations: McpToolDescription['annotations']): ToolEffect {
  if (annotations?.readOnlyHint === true) return 'read'
  if (annotations?.idempotentHint === true) return 'idempotent'
  return 'write'
}
