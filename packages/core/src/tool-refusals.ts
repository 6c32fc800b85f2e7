import type { z } from 'zod'
import { ToolError } from './errors.js'
import { describeShape } from './shape.js'
import { closest } from './suggest.js'
import { formatPath } from './text/format-path.js'
import type { AnyTool } from './types.js'

/** The soft answer to a tool name that does not exist. */
export function unknownTool(name: string, available: readonly string[]): ToolError {
  const list = available.length > 0 ? available.join(', ') : '(none)'
  const guess = closest(name, available)
  const suggestion = guess === undefined ? '' : ` Did you mean '${guess}'?`
  return new ToolError('unknown_tool', `Tool not found: ${name}. Available: ${list}.${suggestion}`, {
    category: 'recoverable',
    retryable: false,
    safeToRepeat: true,
    hint: guess === undefined ? `call one of: ${list}` : `call '${guess}' instead`,
  })
}

/** The soft answer to arguments the tool's schema refused: every issue with its path, the expected shape as hint. */
export function invalidArguments(tool: AnyTool, error: z.ZodError): ToolError {
  const issues = error.issues.slice(0, 20).map((issue) => `${formatPath(issue.path)}: ${issue.message}`)
  const more = error.issues.length > 20 ? `; and ${error.issues.length - 20} more` : ''
  return new ToolError('invalid_arguments', `Invalid arguments for ${tool.name}: ${issues.join('; ')}${more}`, {
    category: 'recoverable',
    retryable: false,
    safeToRepeat: true,
    hint: `expected ${shapeOf(tool)}`,
    cause: error,
  })
}

const shapes = new WeakMap<AnyTool, string>()
function shapeOf(tool: AnyTool): string {
  let shape = shapes.get(tool)
  if (shape === undefined) {
    shape = describeShape(tool.input)
    shapes.set(tool, shape)
  }
  return shape
}
