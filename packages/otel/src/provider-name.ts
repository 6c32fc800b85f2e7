/** The GenAI conventions' well-known `gen_ai.provider.name` values. */
const WELL_KNOWN = new Set([
  'openai',
  'anthropic',
  'aws.bedrock',
  'azure.ai.inference',
  'azure.ai.openai',
  'cohere',
  'deepseek',
  'gcp.gemini',
  'gcp.gen_ai',
  'gcp.vertex_ai',
  'groq',
  'ibm.watsonx.ai',
  'mistral_ai',
  'perplexity',
  'x_ai',
])

/**
 * Provider ids as SDKs spell them (the AI SDK's `openai.chat`, `amazon-bedrock`,
 * `google.vertex.chat`, ...), by their leading segments, to the well-known value.
 */
const ALIASES: ReadonlyArray<readonly [prefix: string, name: string]> = [
  ['google.vertex', 'gcp.vertex_ai'],
  ['vertex', 'gcp.vertex_ai'],
  ['google', 'gcp.gemini'],
  ['gemini', 'gcp.gemini'],
  ['amazon-bedrock', 'aws.bedrock'],
  ['bedrock', 'aws.bedrock'],
  ['azure-openai', 'azure.ai.openai'],
  ['azure', 'azure.ai.openai'],
  ['openai', 'openai'],
  ['anthropic', 'anthropic'],
  ['mistral', 'mistral_ai'],
  ['xai', 'x_ai'],
  ['deepseek', 'deepseek'],
  ['groq', 'groq'],
  ['cohere', 'cohere'],
  ['perplexity', 'perplexity'],
  ['watsonx', 'ibm.watsonx.ai'],
]

const startsWithSegment = (id: string, prefix: string) =>
  id === prefix || id.startsWith(`${prefix}.`) || id.startsWith(`${prefix}-`) || id.startsWith(`${prefix}/`)

/**
 * `gen_ai.provider.name` for a model's provider id: the conventions' well-known value when the id
 * names one (`openai.chat` → `openai`, `amazon-bedrock` → `aws.bedrock`), else the id itself,
 * lowercased and cut to letters, digits, `.`, `_` and `-` (at most 64), as the conventions allow a
 * custom value. `undefined` when there is no usable id: the attribute is then left out.
 */
export function providerName(id: string | undefined, clean: (s: string) => string = (s) => s): string | undefined {
  if (typeof id !== 'string') return undefined
  const lower = clean(id).trim().toLowerCase()
  if (WELL_KNOWN.has(lower)) return lower
  for (const [prefix, name] of ALIASES) if (startsWithSegment(lower, prefix)) return name
  const raw = lower.replace(/[^a-z0-9._-]+/g, '_').slice(0, 64)
  return /[a-z0-9]/.test(raw) ? raw : undefined
}
