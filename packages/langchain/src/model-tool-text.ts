import { convertToOpenAITool } from '@langchain/core/utils/function_calling'
import { toolDescription, toolInputSchema } from '@shallot/core'

/** The provider-neutral function format every LangChain chat model's `bindTools` accepts. */
interface FunctionTool {
  type: 'function'
  function: { name: string; description?: string; parameters?: Record<string, unknown> }
}

/**
 * What the model reads of one tool, cleaned of invisible characters and capped by core's tool-text
 * rules: the tool itself when nothing changes (so a provider binds it exactly as before), else the
 * function format with the clean text. The tool node still runs the registered tool by its name.
 */
function cleaned(tool: object): object {
  let converted: FunctionTool
  try {
    converted = convertToOpenAITool(tool as never) as FunctionTool
  } catch {
    return tool // not convertible here, so the provider would not send it either
  }
  const { name, description, parameters } = converted.function
  const clean = {
    name,
    description: toolDescription(description ?? ''),
    parameters: toolInputSchema(parameters ?? { type: 'object', properties: {} }),
  }
  const same = clean.description === (description ?? '') && JSON.stringify(clean.parameters) === JSON.stringify(parameters)
  return same ? tool : { type: 'function', function: clean }
}

/**
 * The request's client tools (a `wrapModelCall` request's `tools`) as the model may read them,
 * computed once per tool object. Provider tools (plain objects a provider defines) pass unchanged.
 *
 * @example
 * const modelToolText = modelToolTextOf(isClientTool)
 * handler({ ...request, tools: modelToolText(request.tools) })
 */
export function modelToolTextOf(isClientTool: (tool: unknown) => boolean): <T>(tools: readonly T[]) => T[] {
  const seen = new WeakMap<object, object>()
  return (tools) =>
    tools.map((tool) => {
      if (!isClientTool(tool)) return tool
      let text = seen.get(tool as object)
      if (text === undefined) {
        text = cleaned(tool as object)
        seen.set(tool as object, text)
      }
      return text as typeof tool
    })
}
