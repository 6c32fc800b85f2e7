import { generateText, stepCountIs } from 'ai'
import { expect, it } from 'vitest'
import { shallotTools } from './index.js'
import { lastToolResults, scriptedLanguageModel } from './scripted-language-model.test-helper.js'
import { memoryTracing, mistypedPath } from './telemetry.test-helper.js'

const ERROR = 2
const UNSET = 0

it('ai 6 telemetry: the ai.toolCall span of a soft error has status ERROR, the model still reads the soft error', async () => {
  const { tracer, spans } = memoryTracing()
  const { readFile, script } = mistypedPath()
  const model = scriptedLanguageModel(script)
  const shallot = shallotTools({ read_file: readFile })
  const result = await generateText({
    model,
    prompt: 'read src/main.rs',
    tools: shallot.tools,
    stopWhen: stepCountIs(5),
    experimental_telemetry: { isEnabled: true, tracer: shallot.tracer(tracer) },
  })

  expect(result.text).toBe('done')
  const toolSpans = spans().filter((span) => span.name === 'ai.toolCall')
  const byId = Object.fromEntries(toolSpans.map((span) => [span.attributes['ai.toolCall.id'], span]))
  expect(byId.call_bad?.status).toEqual({ code: ERROR, message: 'not_found: file src/mian.rs not found' })
  expect(byId.call_bad?.attributes).toMatchObject({ 'shallot.error.code': 'not_found', 'shallot.error.category': 'recoverable' })
  expect(byId.call_good?.status.code).toBe(UNSET)
  expect(byId.call_good?.attributes['shallot.error.code']).toBeUndefined()
  expect(lastToolResults(model.doGenerateCalls[1]?.prompt ?? [])[0]?.output).toEqual({
    type: 'text',
    value: expect.stringContaining('"error":"not_found"'),
  })
})

it('without the wrapped tracer the same soft error is a successful span (what the wrapper fixes)', async () => {
  const { tracer, spans } = memoryTracing()
  const { readFile, script } = mistypedPath()
  const shallot = shallotTools({ read_file: readFile })
  await generateText({
    model: scriptedLanguageModel(script),
    prompt: 'read src/main.rs',
    tools: shallot.tools,
    stopWhen: stepCountIs(5),
    experimental_telemetry: { isEnabled: true, tracer },
  })
  const bad = spans().find((span) => span.attributes['ai.toolCall.id'] === 'call_bad')
  expect(bad?.status.code).toBe(UNSET)
})
