import { createAgent } from '@shallot/agent'
import { defineTool, type Layer, type ModelAdapter, OptionsError, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { errorClassifier, errorClassifierDefinition } from './index.js'

/** What a provider's or an HTTP client's 503 looks like: a plain Error with a status, nothing shallot made. */
const http503 = () => Object.assign(new Error('503 Service Unavailable: upstream down, key sk-live-0123456789abcdef'), { status: 503 })

/** A layer outside the classifier in both lists: records what leaves it, by kind of call. */
function catcher(seen: Array<[string, unknown]>): Layer {
  return {
    name: 'catcher',
    async wrapToolCall(_ctx, next) {
      try {
        await next()
      } catch (err) {
        seen.push(['tool', err])
        throw err
      }
    },
    async wrapModelCall(_ctx, next) {
      try {
        await next()
      } catch (err) {
        seen.push(['model', err])
        throw err
      }
    },
  }
}

describe('errorClassifier(): one layer for tool calls and model calls', () => {
  it('is one frozen object with both sides, named error-classifier', () => {
    const layer = errorClassifier()
    expect(layer.name).toBe('error-classifier')
    expect(typeof layer.wrapToolCall).toBe('function')
    expect(typeof layer.wrapModelCall).toBe('function')
    expect(Object.isFrozen(layer)).toBe(true)
  })

  it('listed in both lists of one agent, types a 503 of the tool and a 503 of the model as a retryable upstream error', async () => {
    const fetchPage = defineTool({
      name: 'fetch_page',
      description: 'Fetches a page',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        throw http503()
      },
    })
    let turn = 0
    const model: ModelAdapter = {
      async generate() {
        turn++
        if (turn === 1) return { toolCalls: [{ id: 'c1', name: 'fetch_page', args: {} }] }
        throw http503()
      },
    }
    const seen: Array<[string, unknown]> = []
    const classifier = errorClassifier()
    const outer = catcher(seen)
    const outcome = await createAgent({
      model,
      tools: [fetchPage],
      clock: manualClock(),
      middleware: [outer, classifier],
      modelMiddleware: [outer, classifier],
    }).run({ input: 'go' })
    expect(seen.map(([kind]) => kind)).toEqual(['tool', 'model'])
    for (const [kind, error] of seen) {
      expect(ToolError.is(error), kind).toBe(true)
      expect(error, kind).toMatchObject({ code: 'upstream_error', retryable: true, details: expect.objectContaining({ status: 503 }) })
    }
    // The tool's error went back to the model redacted; the model's ended the run as model_failed.
    expect(String((seen[0]?.[1] as ToolError | undefined)?.message)).not.toContain('sk-live-0123456789abcdef')
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
  })

  it('refuses an unknown option, naming it', () => {
    expect(() => errorClassifier({ sanitise: true } as never)).toThrow(OptionsError)
    expect(() => errorClassifier({ sanitise: true } as never)).toThrow('errorClassifier(): unknown option "sanitise"')
  })

  it.each([
    [{ maxRetryAfterMs: Number.NaN }, 'option maxRetryAfterMs'],
    [{ maxRetryAfterMs: Number.POSITIVE_INFINITY }, 'option maxRetryAfterMs'],
    [{ maxRetryAfterMs: -1 }, 'option maxRetryAfterMs'],
    [{ maxLength: Number.NaN }, 'option maxLength'],
    [{ maxLength: -5 }, 'option maxLength'],
    [{ secrets: [Number.NaN] }, 'option secrets[0]'],
    [JSON.parse('{"__proto__": {"builtins": false}}'), 'unknown option "__proto__"'],
  ])('refuses hostile options %j with an error naming the option', (options, named) => {
    expect(() => errorClassifier(options as never)).toThrow(OptionsError)
    expect(() => errorClassifier(options as never)).toThrow(named)
  })
})

describe('errorClassifierDefinition: one create, both kinds of call', () => {
  it('declares both, and builds each side from the same checked options', () => {
    expect(errorClassifierDefinition.handles).toEqual({ tools: true, models: true })
    expect(errorClassifierDefinition.build({ maxLength: 300 })).toBeTypeOf('function')
    expect(errorClassifierDefinition.buildModel({ maxLength: 300 })).toBeTypeOf('function')
    expect(() => errorClassifierDefinition.buildModel({ maxLength: 5 })).toThrow('option maxLength')
  })
})
