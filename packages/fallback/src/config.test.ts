import { createStackFromConfig, loadConfig } from '@shallot/config'
import { defineTool, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { fallbackDefinition } from './index.js'

describe('fallback in a config file', () => {
  it('is named in the stack with its sources as data', async () => {
    let up = true
    const status = defineTool({
      name: 'status_page',
      description: 'status',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        if (!up) throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient' })
        return 'all systems go'
      },
    })
    const config = await loadConfig(
      { stack: [{ fallback: { tools: { status_page: { from: 'cache' } } } }, 'circuit-breaker'] },
      { middleware: [fallbackDefinition] },
    )
    const stack = createStackFromConfig(config, { tools: [status], clock: manualClock() })
    await stack.dispatch({ id: '1', name: 'status_page', args: {} })
    up = false
    expect((await stack.dispatch({ id: '2', name: 'status_page', args: {} })).value).toMatchObject({ value: 'all systems go' })
  })

  it('refuses a tool source when the host gives no dispatch, saying what is missing', async () => {
    const file = { stack: [{ fallback: { tools: { status_page: { from: 'tool', tool: 'status_mirror' } } } }] }
    const config = await loadConfig(file, { middleware: [fallbackDefinition] })
    expect(() => createStackFromConfig(config, { tools: [] })).toThrow(/dispatch/)
  })
})
