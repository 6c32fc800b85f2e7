import { LegacyOpenTelemetry, OpenTelemetry } from '@ai-sdk/otel'
import { generateText, stepCountIs } from 'ai'
import { expect, it, vi } from 'vitest'
import { shallotTools } from './index.js'
import { lastToolResults, scriptedLanguageModel } from './scripted-language-model.test-helper.js'
import { memoryTracing, mistypedPath } from './telemetry.test-helper.js'

// ai 7 needs Node >= 22. Every `ai` import, the package's and this file's, is ai 7 here (the `ai7` alias).
vi.mock('ai', async () => await import('ai7'))
vi.mock('ai/test', async () => await import('ai7/test'))

const ERROR = 2

for (const [name, Integration, callId] of [
  ['OpenTelemetry', OpenTelemetry, 'gen_ai.tool.call.id'],
  ['LegacyOpenTelemetry', LegacyOpenTelemetry, 'ai.toolCall.id'],
] as const) {
  it(`ai 7 ${name}: the tool span of a soft error has status ERROR, the model still reads the soft error`, async () => {
    const { tracer, spans } = memoryTracing()
    const { readFile, script } = mistypedPath()
    const model = scriptedLanguageModel(script)
    const shallot = shallotTools({ read_file: readFile })
    const result = await generateText({
      model,
      prompt: 'read src/main.rs',
      tools: shallot.tools,
      stopWhen: stepCountIs(5),
      // ai 7's option; the types here are ai 6's, which does not have it.
      ...({ telemetry: { integrations: [new Integration({ tracer: shallot.tracer(tracer) })] } } as object),
    })

    expect(result.text).toBe('done')
    const byId = Object.fromEntries(
      spans().flatMap((span) => (span.attributes[callId] === undefined ? [] : [[span.attributes[callId], span]])),
    )
    expect(byId.call_bad?.status).toEqual({ code: ERROR, message: 'not_found: file src/mian.rs not found' })
    expect(byId.call_bad?.attributes['shallot.error.code']).toBe('not_found')
    expect(byId.call_good?.status.code).not.toBe(ERROR)
    expect(lastToolResults(model.doGenerateCalls[1]?.prompt ?? [])[0]?.output).toEqual({
      type: 'text',
      value: expect.stringContaining('"error":"not_found"'),
    })
  })
}
