import type { ModelTool } from './model.js'
import { jsonSchemaOf } from './shape.js'
import type { Stack } from './stack.js'
import type { AnyTool, RunContext } from './types.js'

/**
 * The tool list of the model's next request: each tool's JSON schema (computed once per tool and
 * kept), with the note the layers attach now ("unavailable", say) in front of its description. `now`
 * is the stack clock's reading for this request, read once by the loop for every tool and the model call.
 */
export function modelToolsOf(stack: Stack): (run: RunContext, now: number) => ModelTool[] {
  const schemas = new WeakMap<AnyTool, Record<string, unknown>>()
  return (run, now) => {
    const tools: ModelTool[] = []
    for (const tool of stack.tools.values()) {
      let inputSchema = schemas.get(tool)
      if (inputSchema === undefined) {
        inputSchema = jsonSchemaOf(tool.input)
        schemas.set(tool, inputSchema)
      }
      const note = stack.describeTool(tool, run, now)
      tools.push(
        note === undefined
          ? { name: tool.name, description: tool.description, inputSchema }
          : { name: tool.name, description: `${note} ${tool.description}`, inputSchema, note },
      )
    }
    return tools
  }
}
