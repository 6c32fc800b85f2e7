import { Agent, run } from '@openai/agents'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { defineTool, LoopError, type Middleware, OptionsError, silentLogger, ToolError } from '@shallot/core'
import { stuckLoop } from '@shallot/stuck-loop'
import { manualClock } from '@shallot/testing'
import { defaultMiddleware } from 'shallot'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopErrorOf, shallotFunctionTools } from './index.js'
import { lastOutputs, scriptedModel } from './testing.js'

function projectFiles(files: Record<string, string>) {
  const asked: string[] = []
  const readFile = {
    name: 'read_file',
    description: 'Read a UTF-8 text file from the project',
    parameters: z.object({ path: z.string().min(1) }),
    effect: 'read' as const,
    execute: async ({ path }: { path: string }) => {
      asked.push(path)
      const text = files[path]
      if (text === undefined)
        throw new ToolError('not_found', `file ${path} not found`, { hint: `files: ${Object.keys(files).join(', ')}` })
      return text
    },
  }
  return { readFile, asked }
}

const agentWith = (model: ReturnType<typeof scriptedModel>, tools: ReturnType<typeof shallotFunctionTools>['tools']) =>
  new Agent({ name: 'coder', instructions: 'Answer questions about the project.', model, tools })

describe('shallotFunctionTools in a real OpenAI Agents SDK run', () => {
  it('the model reads a soft not_found for src/mian.rs and recovers with src/main.rs', async () => {
    const { readFile, asked } = projectFiles({ 'src/main.rs': 'fn main() {}' })
    const model = scriptedModel([
      { calls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
      (request) =>
        lastOutputs(request)[0]?.includes('not_found')
          ? { calls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] }
          : { text: 'gave up' },
      (request) => ({ text: `main.rs: ${lastOutputs(request)[0]}` }),
    ])
    const shallot = shallotFunctionTools([readFile])

    const result = await run(agentWith(model, shallot.tools), 'What does src/main.rs do?', { signal: shallot.signal, maxTurns: 10 })

    expect(result.finalOutput).toBe('main.rs: fn main() {}')
    expect(asked).toEqual(['src/mian.rs', 'src/main.rs'])
    expect(lastOutputs(model.requests[1] as never)).toEqual([
      '{"error":"not_found","message":"file src/mian.rs not found","hint":"files: src/main.rs"}',
    ])
    expect(shallot.softErrors.map((e) => e.code)).toEqual(['not_found'])
    expect(shallot.error).toBeUndefined()
  })

  it('invalid arguments are answered by the stack (invalid_arguments with the expected shape), and the tool does not run', async () => {
    const { readFile, asked } = projectFiles({ 'a.txt': 'A' })
    const model = scriptedModel([
      { calls: [{ name: 'read_file', args: { file: 'a.txt' } }] },
      { calls: [{ name: 'read_file', args: { path: 'a.txt' } }] },
      { text: 'done' },
    ])
    const shallot = shallotFunctionTools([readFile])
    await run(agentWith(model, shallot.tools), 'read a.txt', { maxTurns: 10 })
    const seen = JSON.parse(lastOutputs(model.requests[1] as never)[0] ?? '{}')
    expect(seen).toMatchObject({ error: 'invalid_arguments', hint: 'expected { path: string }' })
    expect(asked).toEqual(['a.txt'])
  })

  it('a circuit opens after two failures: the third call is refused without running', async () => {
    let runs = 0
    const status = {
      name: 'deploy_status',
      description: 'Status of the deploy service',
      parameters: z.object({}),
      execute: async (): Promise<string> => {
        runs++
        throw new ToolError('upstream_error', 'deploy service answered HTTP 503')
      },
    }
    const call = { calls: [{ name: 'deploy_status', args: {} }] }
    const model = scriptedModel([call, call, call, { text: 'down' }])
    const shallot = shallotFunctionTools([status], {
      middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }) })],
      clock: manualClock(),
    })
    const result = await run(agentWith(model, shallot.tools), 'Is the deploy healthy?', { maxTurns: 10 })
    expect(result.finalOutput).toBe('down')
    expect(runs).toBe(2)
    expect(shallot.softErrors.map((e) => e.code)).toEqual(['upstream_error', 'upstream_error', 'circuit_open'])
  })
})

describe('hard errors stop the run and reach the caller as the LoopError', () => {
  it('loop_detected from stuck-loop: run() rejects with the LoopError before the model is asked again', async () => {
    const { readFile, asked } = projectFiles({})
    const model = scriptedModel([{ calls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] }])
    const shallot = shallotFunctionTools([readFile], { middleware: [stuckLoop({ refuseAfter: 2, stopAfter: 4 })] })
    const running = run(agentWith(model, shallot.tools), 'What does src/main.rs do?', { signal: shallot.signal, maxTurns: 20 })
    await expect(running).rejects.toSatisfy(LoopError.is)
    await expect(running).rejects.toMatchObject({ kind: 'loop_detected', details: { tool: 'read_file' } })
    expect(asked).toHaveLength(2)
    expect(model.requests).toHaveLength(4)
    expect(shallot.signal.reason).toBe(shallot.error)
  })

  it('the step budget (maxSteps): every attempt spends one; past it the run stops with budget_exhausted', async () => {
    const { readFile, asked } = projectFiles({ 'a.txt': 'A' })
    const model = scriptedModel([{ calls: [{ name: 'read_file', args: { path: 'a.txt' } }] }])
    const shallot = shallotFunctionTools([readFile], { limits: { maxSteps: 3 } })
    const running = run(agentWith(model, shallot.tools), 'read a.txt forever', { signal: shallot.signal, maxTurns: 50 })
    await expect(running).rejects.toMatchObject({ kind: 'budget_exhausted', details: { maxSteps: 3 } })
    expect(asked).toHaveLength(3)
    expect(model.requests).toHaveLength(4)
  })

  it("without signal, run() rejects with the SDK's ToolCallError, and loopErrorOf() finds the LoopError in it", async () => {
    const { readFile } = projectFiles({})
    const model = scriptedModel([{ calls: [{ name: 'read_file', args: { path: 'x' } }] }])
    const shallot = shallotFunctionTools([readFile], { middleware: [stuckLoop({ refuseAfter: 2, stopAfter: 4 })] })
    const error = await run(agentWith(model, shallot.tools), 'go', { maxTurns: 20 }).catch((e: unknown) => e)
    expect(LoopError.is(error)).toBe(false)
    expect(loopErrorOf(error)).toBe(shallot.error)
    expect(loopErrorOf(error)?.kind).toBe('loop_detected')
  })

  it('in a streamed run (no signal: the SDK would take the abort for a cancel) the stream throws, and loopErrorOf(result.error) is the LoopError', async () => {
    const { readFile } = projectFiles({})
    const model = scriptedModel([{ calls: [{ name: 'read_file', args: { path: 'x' } }] }])
    const shallot = shallotFunctionTools([readFile], { middleware: [stuckLoop({ refuseAfter: 2, stopAfter: 4 })] })
    const result = await run(agentWith(model, shallot.tools), 'go', { stream: true, maxTurns: 20 })
    let thrown: unknown
    try {
      for await (const _event of result) {
        // consume
      }
    } catch (error) {
      thrown = error
    }
    expect(loopErrorOf(thrown)?.kind).toBe('loop_detected')
    expect(loopErrorOf(result.error)).toBe(shallot.error)
    expect(result.cancelled).toBe(false)
  })

  it('a hard stop cancels the sibling calls of the same turn', async () => {
    let siblingSignal: AbortSignal | undefined
    const slow = {
      name: 'slow',
      description: 'Waits until aborted',
      parameters: z.object({}),
      execute: (_args: unknown, { signal }: { signal: AbortSignal }) =>
        new Promise<string>((_resolve, reject) => {
          siblingSignal = signal
          signal.addEventListener('abort', () => reject(signal.reason), { once: true })
        }),
    }
    const deleteAll = { name: 'delete_all', description: 'Deletes everything', parameters: z.object({}), execute: async () => 'deleted' }
    const refuseDeleteAll: Middleware = async function refuseDeleteAll(ctx, next) {
      if (ctx.call.name === 'delete_all') {
        await Promise.resolve()
        throw new LoopError('fatal', 'delete_all is never allowed here')
      }
      return next()
    }
    const model = scriptedModel([
      {
        calls: [
          { name: 'slow', args: {} },
          { name: 'delete_all', args: {} },
        ],
      },
    ])
    const shallot = shallotFunctionTools([slow, deleteAll], { middleware: [refuseDeleteAll] })
    const running = run(agentWith(model, shallot.tools), 'clean up', { signal: shallot.signal, maxTurns: 5 })
    await expect(running).rejects.toMatchObject({ kind: 'fatal', message: 'delete_all is never allowed here' })
    expect(siblingSignal?.aborted).toBe(true)
    expect(model.requests).toHaveLength(1)
  })
})

describe('a spec', () => {
  const refund = {
    name: 'refund_payment',
    description: 'Refund a payment',
    parameters: z.object({ payment: z.string() }),
    execute: async ({ payment }: { payment: string }) => ({ refund: `re_${payment}` }),
  }

  it("keeps its reconcile: the stack's tool asks it, with the arguments and the key", async () => {
    const heard: unknown[] = []
    const set = shallotFunctionTools([
      {
        ...refund,
        reconcile: async (args: { payment: string }, { idempotencyKey }: { idempotencyKey: string | undefined }) => {
          heard.push([args, idempotencyKey])
          return { status: 'applied' as const, result: { refund: 're_found' } }
        },
      },
    ])
    const reconcile = set.stack.tools.get('refund_payment')?.reconcile
    const context = { call: { id: 'c1', name: 'refund_payment', args: {} }, signal: new AbortController().signal, attempt: 1 }
    const answer = await reconcile?.({ payment: 'pay_1' }, { ...context, idempotencyKey: 'k-1', log: silentLogger })
    expect(answer).toEqual({ status: 'applied', result: { refund: 're_found' } })
    expect(heard).toEqual([[{ payment: 'pay_1' }, 'k-1']])
  })

  it('forwards one idempotency key per logical call: a retried write sends the same key, through run()', async () => {
    const keys: Array<string | undefined> = []
    const charge = {
      name: 'charge',
      description: 'Charge a card',
      parameters: z.object({ cents: z.number() }),
      effect: 'idempotent' as const,
      execute: async ({ cents }: { cents: number }, { idempotencyKey }: { idempotencyKey: string | undefined }) => {
        keys.push(idempotencyKey)
        if (keys.length === 1) throw Object.assign(new Error('HTTP 503'), { status: 503 })
        return `charged ${cents}`
      },
    }
    const model = scriptedModel([
      { calls: [{ name: 'charge', args: { cents: 500 } }] },
      (request) => ({ text: lastOutputs(request)[0] ?? '' }),
    ])
    const set = shallotFunctionTools([charge], { middleware: defaultMiddleware({ retry: { baseMs: 0, capMs: 0 } }) })
    const result = await run(agentWith(model, set.tools), 'charge 5 dollars', { signal: set.signal })
    expect(result.finalOutput).toBe('charged 500')
    expect(keys).toHaveLength(2)
    expect(typeof keys[0]).toBe('string')
    expect(keys[1]).toBe(keys[0])
  })

  it("takes a defineTool() tool as it is (input, effect, reconcile), with core's execute context", async () => {
    const seen: unknown[] = []
    const lookup = defineTool({
      name: 'lookup',
      description: 'Look an order up',
      input: z.object({ id: z.string() }),
      effect: 'read',
      execute: ({ id }, { attempt, idempotencyKey }) => {
        seen.push([id, attempt, idempotencyKey])
        return `order ${id}`
      },
      reconcile: async () => ({ status: 'not_applied' }),
    })
    const model = scriptedModel([
      { calls: [{ name: 'lookup', args: { id: 'o-1' } }] },
      (request) => ({ text: lastOutputs(request)[0] ?? '' }),
    ])
    const set = shallotFunctionTools([lookup])
    const result = await run(agentWith(model, set.tools), 'find o-1', { signal: set.signal })
    expect(result.finalOutput).toBe('order o-1')
    expect(seen).toEqual([['o-1', 1, undefined]])
    expect(set.stack.tools.get('lookup')?.reconcile).toBeTypeOf('function')
  })

  it('refuses a tool it cannot read: not an object, two schemas, a field a defineTool() tool does not have', () => {
    expect(() => shallotFunctionTools([null as never])).toThrow('shallotFunctionTools(): spec [0] must be an object')
    expect(() => shallotFunctionTools([{ ...refund, input: refund.parameters } as never])).toThrow(/both input and parameters/)
    const definition = defineTool({ name: 'lookup', description: 'x', input: z.object({}), execute: () => 'ok' })
    expect(() => shallotFunctionTools([{ ...definition, timeoutMs: 5 } as never])).toThrow(
      'spec "lookup" has the unknown field "timeoutMs": give timeout() in the middleware',
    )
    expect(() => shallotFunctionTools([{ ...refund, effect: 'reed' } as never])).toThrow(/effect/)
  })

  it('with a field shallot would not use is refused, naming the field and what to do instead', () => {
    expect(() => shallotFunctionTools([{ ...refund, needsApproval: true } as never])).toThrow(
      'shallotFunctionTools(): spec "refund_payment" has the unknown field "needsApproval": ask for approval with policy() in the middleware',
    )
    expect(() => shallotFunctionTools([{ ...refund, reconciler: () => ({ status: 'unknown' }) } as never])).toThrow(
      'spec "refund_payment" has the unknown field "reconciler": remove it; a spec takes name, description, parameters, effect, execute, reconcile (a defineTool() tool: input instead of parameters)',
    )
  })
})

describe('options', () => {
  it('names the bad option and the value', () => {
    expect(() => shallotFunctionTools([], { maxSteps: 0 })).toThrow(OptionsError)
    expect(() => shallotFunctionTools([], { maxSteps: 0 })).toThrow(/maxSteps/)
    expect(() => shallotFunctionTools('read_file' as never)).toThrow(/takes an array/)
  })
})
