import { toolDescription, toolInputSchema } from '@shallot/core'
import { asSchema, type FlexibleSchema, jsonSchema, type Tool } from 'ai'

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> => typeof (value as { then?: unknown } | null)?.then === 'function'

/**
 * The description and input schema the SDK sends the model, cleaned of invisible characters and
 * capped by core's tool-text rules. The stack validates the input (once, with the original schema);
 * the SDK only parses the JSON. A description computed per call (ai 7) is cleaned when computed.
 */
export function modelText(sdkTool: Tool): Pick<Tool, 'description' | 'inputSchema'> {
  const { description } = sdkTool as { description?: unknown }
  const cleanDescription =
    typeof description === 'function' ? (...args: unknown[]) => toolDescription(description(...args)) : toolDescription(description)
  const inputSchema = jsonSchema(() => {
    const json = asSchema(sdkTool.inputSchema as FlexibleSchema<unknown>).jsonSchema
    return (isPromiseLike(json) ? Promise.resolve(json).then(toolInputSchema) : toolInputSchema(json)) as never
  })
  return { ...(description === undefined ? {} : { description: cleanDescription as string }), inputSchema }
}
