import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  type AnyTool,
  createRun,
  createStack,
  defineTool,
  LoopError,
  type Middleware,
  ToolError,
  type ToolExecuteContext,
} from './index.js'

// The field `@shallot/idempotency` declares on ToolContext, declared the same way here: core's tests
// set it without depending on the layer, and the terminal must forward it to the tool.
declare module './types.js' {
  interface ToolContext {
    idempotencyKey?: string
  }
}

function deferred<T = void>() {
  let resolve!: (value: T) => void
  let reject!: (reason: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Three file tools that count how often they ran. */
function fileTools() {
  const runs: string[] = []
  const readFile = defineTool({
    name: 'read_file',
    description: 'Read a text file',
    input: z.object({ path: z.string() }),
    effect: 'read',
    execute: ({ path }) => {
      runs.push(`read_file ${path}`)
      return `contents of ${path}`
    },
  })
  const writeFile = defineTool({
    name: 'write_file',
    description: 'Write a text file',
    input: z.object({ path: z.string(), content: z.string() }),
    execute: ({ path }) => {
      runs.push(`write_file ${path}`)
      return 'ok'
    },
  })
  const listDir = defineTool({
    name: 'list_dir',
    description: 'List a directory',
    input: z.object({ path: z.string().default('.') }),
    effect: 'read',
    execute: ({ path }) => {
      runs.push(`list_dir ${path}`)
      return ['a.txt']
    },
  })
  return { runs, tools: [readFile, writeFile, listDir] as AnyTool[] }
}

describe('dispatcher: unknown tools', () => {
  it('answers an unknown name softly with the available tools and the closest one, and runs nothing', async () => {
    const { runs, tools } = fileTools()
    const stack = createStack({ tools })
    const result = await stack.dispatch({ id: 'c1', name: 'read_fiel', args: { path: 'a.txt' } })
    expect(result.ok).toBe(false)
    expect(result.error).toMatchObject({
      code: 'unknown_tool',
      category: 'recoverable',
      retryable: false,
      message: "Tool not found: read_fiel. Available: read_file, write_file, list_dir. Did you mean 'read_file'?",
      hint: "call 'read_file' instead",
    })
    expect(result.content).toBe(
      JSON.stringify({
        error: 'unknown_tool',
        message: "Tool not found: read_fiel. Available: read_file, write_file, list_dir. Did you mean 'read_file'?",
        hint: "call 'read_file' instead",
      }),
    )
    expect(runs).toEqual([])
  })

  it('suggests a match whatever its case, and nothing when no name is close', async () => {
    const { runs, tools } = fileTools()
    const stack = createStack({ tools })
    const cased = await stack.dispatch({ id: 'c1', name: 'LIST_DIR', args: {} })
    expect(cased.error?.message).toBe("Tool not found: LIST_DIR. Available: read_file, write_file, list_dir. Did you mean 'list_dir'?")
    const far = await stack.dispatch({ id: 'c2', name: 'deploy_to_production', args: {} })
    expect(far.error?.message).toBe('Tool not found: deploy_to_production. Available: read_file, write_file, list_dir.')
    expect(far.error?.hint).toBe('call one of: read_file, write_file, list_dir')
    expect(runs).toEqual([])
  })
})

describe('dispatcher: suggestions for short names', () => {
  it('suggests a short name one typo away, but not one with nothing in common', async () => {
    const tool = (name: string) => defineTool({ name, description: '', input: z.object({}), effect: 'read', execute: () => name })
    const stack = createStack({ tools: [tool('ls'), tool('cat')] })
    const typo = await stack.dispatch({ id: 'c1', name: 'lss', args: {} })
    expect(typo.error?.message).toBe("Tool not found: lss. Available: ls, cat. Did you mean 'ls'?")
    const unrelated = await stack.dispatch({ id: 'c2', name: 'rm', args: {} })
    expect(unrelated.error?.message).toBe('Tool not found: rm. Available: ls, cat.')
  })
})

describe('dispatcher: argument validation', () => {
  const search = defineTool({
    name: 'search',
    description: 'Search the index',
    input: z.object({
      query: z.string(),
      options: z.object({ limit: z.number().int(), mode: z.enum(['exact', 'fuzzy']).optional() }),
      tags: z.array(z.string()),
    }),
    effect: 'read',
    execute: () => {
      throw new Error('must not run')
    },
  })

  it('refuses invalid arguments softly, listing every issue with its path and the expected shape as hint', async () => {
    const run = createRun()
    const stack = createStack({ tools: [search] })
    const result = await stack.dispatch({ id: 'c1', name: 'search', args: { query: 42, options: { limit: 1.5 }, tags: ['a', 7] } }, { run })
    expect(result.ok).toBe(false)
    expect(result.error).toMatchObject({ code: 'invalid_arguments', category: 'recoverable', retryable: false, safeToRepeat: true })
    expect(result.error?.message).toBe(
      'Invalid arguments for search: ' +
        'query: Invalid input: expected string, received number; ' +
        'options.limit: Invalid input: expected int, received number; ' +
        'tags[1]: Invalid input: expected string, received number',
    )
    expect(result.error?.hint).toBe('expected { query: string, options: { limit: integer, mode?: "exact" | "fuzzy" }, tags: string[] }')
    expect(JSON.parse(result.content)).toEqual({ error: 'invalid_arguments', message: result.error?.message, hint: result.error?.hint })
    expect(run.budget.used).toBe(0)
  })

  it('names a missing field by its path', async () => {
    const stack = createStack({ tools: [search] })
    const result = await stack.dispatch({ id: 'c1', name: 'search', args: { query: 'x', tags: [] } })
    expect(result.error?.message).toBe('Invalid arguments for search: options: Invalid input: expected object, received undefined')
  })

  it('hands execute the parsed arguments (defaults applied) and the attempt context', async () => {
    let received: { args: unknown; context: ToolExecuteContext } | undefined
    const list = defineTool({
      name: 'list_dir',
      description: '',
      input: z.object({ path: z.string().default('.'), depth: z.coerce.number() }),
      effect: 'read',
      execute: (args, context) => {
        received = { args, context }
        return 'ok'
      },
    })
    const keyed: Middleware = async function keyed(ctx, next) {
      ctx.idempotencyKey = 'key-1'
      await next()
    }
    const stack = createStack({ middleware: [keyed], tools: [list] })
    await stack.dispatch({ id: 'c1', name: 'list_dir', args: { depth: '2' } })
    expect(received?.args).toEqual({ path: '.', depth: 2 })
    expect(received?.context).toMatchObject({ idempotencyKey: 'key-1', attempt: 1 })
    expect(received?.context.signal).toBeInstanceOf(AbortSignal)
  })
})

describe('dispatcher: results and soft errors', () => {
  it('caps tool output the model reads with a visible truncation marker, keeping the full value', async () => {
    const big = defineTool({ name: 'big', description: '', input: z.object({}), effect: 'read', execute: () => 'x'.repeat(250) })
    const stack = createStack({ tools: [big], limits: { maxOutputChars: 100 } })
    const result = await stack.dispatch({ id: 'c1', name: 'big', args: {} })
    expect(result.ok).toBe(true)
    // At most maxOutputChars in all: 72 characters of output and the 28-character marker.
    expect(result.content).toBe(`${'x'.repeat(72)}… [truncated from 250 chars]`)
    expect(result.value).toBe('x'.repeat(250))
  })

  it('never cuts tool output between the halves of a surrogate pair', async () => {
    const emoji = defineTool({ name: 'emoji', description: '', input: z.object({}), effect: 'read', execute: () => `a${'😀'.repeat(20)}` })
    const stack = createStack({ tools: [emoji], limits: { maxOutputChars: 31 } })
    const result = await stack.dispatch({ id: 'c1', name: 'emoji', args: {} })
    // 31 - 27 leaves 4 code units: 'a', one emoji, and half of the next, which must go.
    expect(result.content).toBe('a😀… [truncated from 41 chars]')
  })

  it('caps output at 20,000 characters by default and renders non-string values as compact JSON', async () => {
    const huge = defineTool({
      name: 'huge',
      description: '',
      input: z.object({ size: z.number() }),
      effect: 'read',
      execute: ({ size }) => ({ data: 'y'.repeat(size) }),
    })
    const stack = createStack({ tools: [huge] })
    const small = await stack.dispatch({ id: 'c1', name: 'huge', args: { size: 3 } })
    expect(small.content).toBe('{"data":"yyy"}')
    const large = await stack.dispatch({ id: 'c2', name: 'huge', args: { size: 30_000 } })
    expect(large.content.startsWith('{"data":"yyy')).toBe(true)
    expect(large.content).toHaveLength(20_000)
    expect(large.content.endsWith('… [truncated from 30011 chars]')).toBe(true)
  })

  it('turns a ToolError thrown by the tool into a soft result whose content is compact JSON error, message, hint', async () => {
    const secret = new Error('ECONNREFUSED 10.0.0.7:5432 password=hunter2')
    const read = defineTool({
      name: 'read_file',
      description: '',
      input: z.object({ path: z.string() }),
      effect: 'read',
      execute: ({ path }) => {
        throw new ToolError('not_found', `file ${path} not found`, { hint: 'list the directory first', cause: secret })
      },
    })
    const stack = createStack({ tools: [read] })
    const result = await stack.dispatch({ id: 'c1', name: 'read_file', args: { path: 'src/mian.rs' } })
    expect(result.ok).toBe(false)
    expect(result.content).toBe('{"error":"not_found","message":"file src/mian.rs not found","hint":"list the directory first"}')
    expect(result.error).toEqual({
      code: 'not_found',
      category: 'recoverable',
      message: 'file src/mian.rs not found',
      hint: 'list the directory first',
      retryable: false,
      safeToRepeat: false,
    })
    expect(JSON.stringify(result)).not.toContain('hunter2')
    expect(result.attempts).toBe(1)
  })

  it('renders soft errors with a swapped renderer', async () => {
    const { tools } = fileTools()
    const stack = createStack({ tools, renderError: (error, call) => `${call.name} failed: ${error.code}` })
    const result = await stack.dispatch({ id: 'c1', name: 'nope', args: {} })
    expect(result.content).toBe('nope failed: unknown_tool')
  })

  it('spends one step of the run budget per attempt and ends the run when the budget is gone, before the tool runs', async () => {
    const { runs, tools } = fileTools()
    const again: Middleware = async function again(ctx, next) {
      for (;;) {
        await next()
        ctx.attempt++
      }
    }
    const run = createRun({ maxSteps: 2 })
    const stack = createStack({ middleware: [again], tools })
    const outcome = stack.dispatch({ id: 'c1', name: 'read_file', args: { path: 'a' } }, { run })
    await expect(outcome).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'budget_exhausted')
    expect(runs).toEqual(['read_file a', 'read_file a'])
    expect(run.budget.used).toBe(2)
  })
})

describe('dispatcher: late results', () => {
  function slowTool() {
    const started = deferred()
    const finish = deferred<string>()
    const seen: { signal?: AbortSignal; returned: boolean } = { returned: false }
    const tool = defineTool({
      name: 'slow',
      description: '',
      input: z.object({}),
      effect: 'read',
      execute: async (_args, { signal }) => {
        seen.signal = signal
        started.resolve()
        const value = await finish.promise
        seen.returned = true
        return value
      },
    })
    return { tool, started, finish, seen }
  }

  /** A layer that gives the call its own signal and aborts it, with a ToolError reason, while the tool runs. */
  function abortMidCall(started: Promise<void>, afterAbort: () => void, observed: { result?: unknown; set: boolean }): Middleware {
    return async function abortMidCall(ctx, next) {
      const controller = new AbortController()
      ctx.signal = controller.signal
      const inner = next()
      await started
      controller.abort(new ToolError('timeout', 'slow took longer than 10 ms', { retryable: true }))
      afterAbort()
      try {
        await inner
      } finally {
        observed.set = 'result' in ctx && ctx.result !== undefined
        observed.result = ctx.result
      }
    }
  }

  it('drops a result that arrives after the attempt signal aborted: ctx.result stays unset, the abort reason comes back', async () => {
    const { tool, started, finish, seen } = slowTool()
    const observed: { result?: unknown; set: boolean } = { set: false }
    const stack = createStack({ middleware: [abortMidCall(started.promise, () => finish.resolve('late value'), observed)], tools: [tool] })
    const result = await stack.dispatch({ id: 'c1', name: 'slow', args: {} })
    expect(seen.returned).toBe(true)
    expect(seen.signal?.aborted).toBe(true)
    expect(observed).toEqual({ set: false, result: undefined })
    expect(result.ok).toBe(false)
    expect(result.value).toBeUndefined()
    expect(result.content).toBe('{"error":"timeout","message":"slow took longer than 10 ms"}')
  })

  it('stops waiting the moment the attempt signal aborts: the aborting layer gets its reason, the late failure changes nothing', async () => {
    const { tool, started, finish } = slowTool()
    const lateFailure = new Error('socket hang up')
    const seen: { error?: unknown; result?: unknown; settledBeforeTool?: boolean } = {}
    let toolSettled = false
    const owner: Middleware = async function owner(ctx, next) {
      try {
        await next()
      } catch (err) {
        seen.error = err
        seen.result = ctx.result
        seen.settledBeforeTool = !toolSettled
        throw err
      }
    }
    const observed: { result?: unknown; set: boolean } = { set: false }
    const stack = createStack({
      middleware: [owner, abortMidCall(started.promise, () => {}, observed)],
      tools: [tool],
    })
    const result = await stack.dispatch({ id: 'c1', name: 'slow', args: {} })
    expect(seen).toMatchObject({ result: undefined, settledBeforeTool: true })
    expect(seen.error).toSatisfy(ToolError.is)
    finish.reject(lateFailure)
    toolSettled = true
    await new Promise((resolve) => setImmediate(resolve))
    expect(observed.set).toBe(false)
    expect(result.error).toMatchObject({ code: 'timeout', message: 'slow took longer than 10 ms' })
  })
})
