import { type AnyTool, type ModelTool, type RunContext, type Stack, toolDescription, toolInputSchema } from '@shallot/core'
import { jsonSchemaOf } from '@shallot/core/kit'

/** What the model reads of one tool, whatever made it (MCP, an adapter, a config): cleaned and capped once. */
interface ToolText {
  readonly description: string
  readonly inputSchema: Record<string, unknown>
}

/**
 * The tool list of the model's next request: each tool's description and JSON schema, cleaned of
 * invisible characters and capped (computed once per tool and kept), with the note the layers attach
 * now ("unavailable", say) in front of its description. `now` is the stack clock's reading for this
 * request, read once by the loop for every tool and the model call.
 */
export function modelToolsOf(stack: Stack): (run: RunContext, now: number) => ModelTool[] {
  const texts = new WeakMap<AnyTool, ToolText>()
  return (run, now) => {
    const tools: ModelTool[] = []
    for (const tool of stack.tools.values()) {
      let text = texts.get(tool)
      if (text === undefined) {
        text = { description: toolDescription(tool.description), inputSchema: toolInputSchema(jsonSchemaOf(tool.input)) }
        texts.set(tool, text)
      }
      const { description, inputSchema } = text
      const note = stack.describeTool(tool, run, now)
      tools.push(
        note === undefined
          ? { name: tool.name, description, inputSchema }
          : { name: tool.name, description: `${note} ${description}`, inputSchema, note },
      )
    }
    return tools
  }
}
