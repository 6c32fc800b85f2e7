/** A tool result's output as the AI SDK hands it to a provider. */
export type SoftErrorOutput = { readonly type: 'text' | 'error-text'; readonly value: string }

/**
 * The output of a failed tool result, so the model reads the stack's rendering byte for byte on
 * ai 6 and ai 7. The provider packages of ai 7 (`@ai-sdk/openai` 4) send an `error-text` or
 * `error-json` output as `{"error": value}`, which encodes the stack's JSON a second time, while
 * those of ai 6 send it as is. OpenAI's wire formats have no error flag, so a `text` output loses
 * nothing there. Anthropic's has one (`is_error: true`) and sends `error-text` as is on both
 * majors, so a provider known to flag errors keeps `error-text`.
 *
 * @example
 * softErrorOutput('{"error":"not_found"}', false) // { type: 'text', value: '{"error":"not_found"}' }
 */
export function softErrorOutput(content: string, flagged: boolean): SoftErrorOutput {
  return { type: flagged ? 'error-text' : 'text', value: content }
}

/**
 * True when the model's provider marks a failed tool result on the wire and sends `error-text` as
 * is (Anthropic, also through Vertex or Bedrock: `is_error`). Any other provider, or a gateway id
 * string, gets a plain `text` output.
 *
 * @example
 * flagsToolErrors(anthropic('claude-sonnet-4-5')) // true
 */
export function flagsToolErrors(model: unknown): boolean {
  const provider = typeof model === 'object' && model !== null ? (model as { provider?: unknown }).provider : undefined
  return typeof provider === 'string' && provider.includes('anthropic')
}
