import { createStack, defineTool } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { errorClassifier } from './index.js'

// What fetch throws when a request never completed, runtime by runtime. Each is a TypeError, the same
// class a tool bug throws, so without these rules the model would read "this is a bug in the tool".
const undiciSocket = () => Object.assign(new Error('other side closed'), { name: 'SocketError', code: 'UND_ERR_SOCKET' })
const failures: [string, () => unknown, boolean][] = [
  ['Chrome, Edge, Cloudflare Workers and Vercel Edge', () => new TypeError('Failed to fetch'), false],
  ['Firefox', () => new TypeError('NetworkError when attempting to fetch resource.'), false],
  ['Safari', () => new TypeError('Load failed'), false],
  ['Safari, connection dropped', () => new TypeError('The network connection was lost.'), false],
  ['Deno', () => new TypeError('error sending request for url (https://api.example.com/v1): client error (Connect)'), false],
  [
    'Bun, connection refused',
    () => Object.assign(new Error('Unable to connect. Is the computer able to access the url?'), { code: 'ConnectionRefused' }),
    true,
  ],
  ['undici, body cut off', () => new TypeError('terminated', { cause: undiciSocket() }), false],
  ['undici, body cut off, no cause', () => new TypeError('terminated'), false],
  [
    'undici fetch failed with a cause',
    () =>
      new TypeError('fetch failed', {
        cause: Object.assign(new Error('connect ECONNREFUSED 93.184.216.34:443'), { code: 'ECONNREFUSED' }),
      }),
    true,
  ],
  ['undici fetch failed without a cause', () => new TypeError('fetch failed'), false],
]

describe('fetch failures from every runtime', () => {
  it.each(failures)('%s → network_error, transient', async (_runtime, thrown, safeToRepeat) => {
    const fetchPage = defineTool({
      name: 'fetch_page',
      description: 'fetch a page',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        throw thrown()
      },
    })
    const stack = createStack({ middleware: [errorClassifier()], tools: [fetchPage] })
    const result = await stack.dispatch({ id: 'c1', name: 'fetch_page', args: {} })
    expect(result.error).toMatchObject({ code: 'network_error', category: 'transient', retryable: true, safeToRepeat })
  })

  it('still calls a TypeError that is not about fetching a bug in the tool', async () => {
    const broken = defineTool({
      name: 'broken',
      description: 'reads a missing field',
      input: z.object({}),
      execute: () => {
        throw new TypeError("Cannot read properties of undefined (reading 'id')")
      },
    })
    const stack = createStack({ middleware: [errorClassifier()], tools: [broken] })
    expect((await stack.dispatch({ id: 'c1', name: 'broken', args: {} })).error?.code).toBe('tool_panic')
  })
})
