import type { LanguageModelMiddleware } from 'ai'

// The language-model specification of the installed major (v3 for ai 6, v4 for ai 7), read off the SDK's own
// middleware type so one source compiles against both.

type WrapGenerate = NonNullable<LanguageModelMiddleware['wrapGenerate']>
type WrapStream = NonNullable<LanguageModelMiddleware['wrapStream']>

/** The options of one `doGenerate` / `doStream` call: the prompt, the tools, the settings, the caller's signal. */
export type CallParams = Parameters<WrapGenerate>[0]['params']
/** A model as the specification calls it. */
export type SpecModel = Parameters<WrapGenerate>[0]['model']
export type GenerateResult = Awaited<ReturnType<WrapGenerate>>
export type StreamResult = Awaited<ReturnType<WrapStream>>
export type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never
export type Prompt = CallParams['prompt']
export type PromptMessage = Prompt[number]
