import { createOpenAI } from '@ai-sdk/openai'
import { OptionsError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { aiSdkModel } from './ai-sdk-model.js'

const openai = createOpenAI({ apiKey: 'sk-fake', baseURL: 'http://127.0.0.1:9/v1' })

describe('aiSdkModel: the name a chain, a price table and a report use', () => {
  it("is the model's id by default, so prices key by the id users already know", () => {
    expect(aiSdkModel(openai.chat('gpt-4o-mini')).name).toBe('gpt-4o-mini')
    expect(aiSdkModel('openai/gpt-4o').name).toBe('openai/gpt-4o')
  })

  it("carries the model's provider id, for model.call events and gen_ai.provider.name", () => {
    expect(aiSdkModel(openai.chat('gpt-4o-mini')).provider).toBe('openai.chat')
    expect(aiSdkModel('openai/gpt-4o').provider).toBeUndefined()
  })

  it('takes a name of its own, for two entries of a chain with the same id', () => {
    expect(aiSdkModel(openai.chat('gpt-4o-mini'), { name: 'primary' }).name).toBe('primary')
  })

  it('refuses an empty or non-string name with the fix', () => {
    for (const bad of ['', '   ', 42, null]) {
      expect(() => aiSdkModel(openai.chat('gpt-4o-mini'), { name: bad as string })).toThrow(OptionsError)
    }
    expect(() => aiSdkModel(openai.chat('gpt-4o-mini'), { name: '' })).toThrow(/option name: must name the model/)
  })
})
