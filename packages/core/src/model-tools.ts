import type { ModelTool } from './model.js'
import { jsonSchemaOf } from './shape.js'
import type { Stack } from './stack.js'
import type { AnyTool, RunContext } from './types.js'

/**
 * The tool list of the model's next request: each tool's JSON schema (computed once per tool and
 * kept), with the note the layers attach now ("unavailable", say) in front of its description.
 */
export function modelToolsOf(stack: Stack): (run: RunContext) => ModelTool[] {
  const schemas = new WeakMap<AnyTool, Record<string, unknown>>()
  return (run) => {
    const tools: ModelTool[] = []
    for (const tool of stack.tools.values()) {
      let inputSchema = schemas.get(tool)
      if (inputSchema === undefined) {
        inputSchema = jsonSchemaOf(tool.input)
        schemas.set(tool, inputSchema)
      }
      const note = stack.describeTool(tool, run)
      tools.push(
        note === undefined
          ? { name: tool.name, description: tool.description, inputSchema }
          : { name: tool.name, description: `${note} ${tool.description}`, inputSchema, note },
      )
    }
    return tools
  }
}
