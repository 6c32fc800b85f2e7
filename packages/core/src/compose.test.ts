import koaCompose from 'koa-compose'
import { describe, expect, it } from 'vitest'
import { compose, LoopError, type Middleware, MiddlewareUsageError, type Next, type ToolContext, ToolError } from './index.js'

// compose never reads the context, it only hands the same object to every layer.
function fakeContext(): ToolContext {
  return { attempt: 1 } as unknown as ToolContext
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

/** Runs `fn`, lets Node process pending rejections, and returns every unhandled rejection seen meanwhile. */
async function unhandledRejectionsDuring(fn: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = []
  const listener = (reason: unknown) => seen.push(reason)
  process.on('unhandledRejection', listener)
  try {
    await fn()
    await new Promise<void>((resolve) => setImmediate(resolve))
    await new Promise<void>((resolve) => setImmediate(resolve))
  } finally {
    process.off('unhandledRejection', listener)
  }
  return seen
}

function recorder() {
  const events: string[] = []
  const layer =
    (name: string): Middleware =>
    async (_ctx, next) => {
      events.push(`${name}:in`)
      await next()
      events.push(`${name}:out`)
    }
  const final: Next = async () => {
    events.push('final')
  }
  return { events, layer, final }
}

describe('compose: onion order', () => {
  it('runs the first layer outermost and unwinds in reverse, with the final next in the middle', async () => {
    const { events, layer, final } = recorder()
    await compose([layer('a'), layer('b'), layer('c')])(fakeContext(), final)
    expect(events).toEqual(['a:in', 'b:in', 'c:in', 'final', 'c:out', 'b:out', 'a:out'])
  })

  it('hands the same context object to every layer, so a field set outside is seen inside and back', async () => {
    const ctx = fakeContext()
    const seen: ToolContext[] = []
    const outer: Middleware = async (c, next) => {
      seen.push(c)
      c.attempt = 7
      await next()
      expect(c.idempotencyKey).toBe('set-inside')
    }
    const inner: Middleware = async (c, next) => {
      seen.push(c)
      expect(c.attempt).toBe(7)
      c.idempotencyKey = 'set-inside'
      await next()
    }
    await compose([outer, inner])(ctx, async () => {})
    expect(seen).toHaveLength(2)
    expect(seen[0]).toBe(ctx)
    expect(seen[1]).toBe(ctx)
    expect(ctx.idempotencyKey).toBe('set-inside')
  })

  it('calls the final next of an empty composition, and resolves without one', async () => {
    const { events, final } = recorder()
    await compose([])(fakeContext(), final)
    expect(events).toEqual(['final'])
    await expect(compose([])(fakeContext(), undefined as unknown as Next)).resolves.toBeUndefined()
  })

  it('copies the list, so changing the array after composing changes nothing', async () => {
    const { events, layer, final } = recorder()
    const list = [layer('a')]
    const composed = compose(list)
    list.push(layer('late'))
    await composed(fakeContext(), final)
    expect(events).toEqual(['a:in', 'final', 'a:out'])
  })
})

describe('compose: nesting', () => {
  it('returns a middleware, so composed stacks nest inside stacks and continue into the outer next layer', async () => {
    const { events, layer, final } = recorder()
    const innermost = compose([layer('c'), layer('d')])
    const middle = compose([layer('b'), innermost])
    await compose([layer('a'), middle, layer('e')])(fakeContext(), final)
    expect(events).toEqual(['a:in', 'b:in', 'c:in', 'd:in', 'e:in', 'final', 'e:out', 'd:out', 'c:out', 'b:out', 'a:out'])
  })

  it('joins the describeTool notes of its layers, including nested stacks', () => {
    const note = (text: string): Middleware => Object.assign(async (_ctx: ToolContext, next: Next) => next(), { describeTool: () => text })
    const silent: Middleware = async (_ctx, next) => next()
    const composed = compose([note('unavailable until 12:00.'), silent, compose([note('slow today.')])])
    const tool = { name: 't' } as Parameters<NonNullable<Middleware['describeTool']>>[0]
    const run = {} as Parameters<NonNullable<Middleware['describeTool']>>[1]
    expect(composed.describeTool?.(tool, run, 0)).toBe('unavailable until 12:00. slow today.')
    expect(compose([silent]).describeTool).toBeUndefined()
  })
})

describe('compose: errors', () => {
  it('propagates an inner error outward past layers without a catch, running their finally blocks inside out', async () => {
    const events: string[] = []
    const boom = new ToolError('upstream_error', 'HTTP 503')
    const pass =
      (name: string): Middleware =>
      async (_ctx, next) => {
        try {
          await next()
          events.push(`${name}:after`)
        } finally {
          events.push(`${name}:finally`)
        }
      }
    const thrower: Middleware = async () => {
      events.push('thrower')
      throw boom
    }
    const result = compose([pass('a'), pass('b'), thrower])(fakeContext(), async () => {})
    await expect(result).rejects.toBe(boom)
    expect(events).toEqual(['thrower', 'b:finally', 'a:finally'])
  })

  it('lets an outer layer catch an inner error and recover, so the stack resolves', async () => {
    const events: string[] = []
    const catcher: Middleware = async (_ctx, next) => {
      try {
        await next()
      } catch (err) {
        events.push(`caught ${(err as ToolError).code}`)
      }
    }
    const middle: Middleware = async (_ctx, next) => {
      await next()
      events.push('middle:after (must not run)')
    }
    const failing: Next = async () => {
      throw new ToolError('not_found', 'file src/mian.rs not found')
    }
    await expect(compose([catcher, middle])(fakeContext(), failing)).resolves.toBeUndefined()
    expect(events).toEqual(['caught not_found'])
  })

  it('turns a synchronous throw from a non-async layer or final next into a rejection', async () => {
    const boom = new Error('sync')
    const syncThrower = (() => {
      throw boom
    }) as unknown as Middleware
    let composed: Promise<void> | undefined
    expect(() => {
      composed = compose([syncThrower])(fakeContext(), async () => {})
    }).not.toThrow()
    await expect(composed).rejects.toBe(boom)

    const syncFinal = (() => {
      throw boom
    }) as unknown as Next
    const seen: unknown[] = []
    const innermost: Middleware = async (_ctx, next) => {
      try {
        await next()
      } catch (err) {
        seen.push(err)
        throw err
      }
    }
    await expect(compose([innermost])(fakeContext(), syncFinal)).rejects.toBe(boom)
    expect(seen).toEqual([boom])
  })

  it('passes a LoopError through every layer untouched: same object, same kind and message', async () => {
    const hard = new LoopError('loop_detected', 'read_file failed 5 times with the same arguments', { details: { tool: 'read_file' } })
    const events: string[] = []
    const classifier: Middleware = async (_ctx, next) => {
      try {
        await next()
      } catch (err) {
        if (LoopError.is(err)) {
          events.push('classifier rethrows the LoopError')
          throw err
        }
        throw new ToolError('tool_panic', 'wrapped')
      }
    }
    const finallyLayer: Middleware = async (_ctx, next) => {
      try {
        await next()
      } finally {
        events.push('finally')
      }
    }
    const result = compose([classifier, finallyLayer])(fakeContext(), async () => {
      throw hard
    })
    await expect(result).rejects.toBe(hard)
    await expect(result).rejects.toSatisfy(LoopError.is)
    expect(hard).toMatchObject({ kind: 'loop_detected', message: 'read_file failed 5 times with the same arguments' })
    expect(events).toEqual(['finally', 'classifier rethrows the LoopError'])
  })
})

describe('compose: validation', () => {
  it.each([
    ['a number', 42, 'number 42'],
    ['null', null, 'null'],
    ['undefined', undefined, 'undefined undefined'],
    ['a string', 'retry', 'string retry'],
    ['an object', { name: 'retry' }, 'an object'],
    ['a nested array', [async () => {}], 'an array'],
  ])('throws a TypeError at compose time naming the index when a layer is %s', (_label, value, got) => {
    const ok: Middleware = async (_ctx, next) => next()
    const list = [ok, ok, value] as unknown as Middleware[]
    expect(() => compose(list)).toThrow(TypeError)
    expect(() => compose(list)).toThrow(`compose(): middleware[2] must be a function (ctx, next) => Promise<void>, got ${got}`)
  })

  it('throws a TypeError when given something other than an array', () => {
    const layer: Middleware = async (_ctx, next) => next()
    expect(() => compose(layer as unknown as Middleware[])).toThrow(
      new TypeError('compose() takes an array of middleware functions, got function layer'),
    )
  })
})

describe('compose: re-entrant next', () => {
  it('lets a retry-like layer call next() again after it settled, running the inner layers once per call', async () => {
    const { events, layer } = recorder()
    let runs = 0
    const retryThrice: Middleware = async function retryThrice(ctx, next) {
      for (let attempt = 1; ; attempt++) {
        ctx.attempt = attempt
        events.push(`retry:attempt ${attempt}`)
        try {
          await next()
          return
        } catch (err) {
          if (attempt === 3) throw err
        }
      }
    }
    const flaky: Next = async () => {
      runs++
      events.push(`tool run ${runs}`)
      if (runs < 3) throw new ToolError('upstream_error', `HTTP 503 #${runs}`)
    }
    const ctx = fakeContext()
    await compose([layer('outer'), retryThrice, layer('inner')])(ctx, flaky)
    expect(runs).toBe(3)
    expect(ctx.attempt).toBe(3)
    expect(events).toEqual([
      'outer:in',
      'retry:attempt 1',
      'inner:in',
      'tool run 1',
      'retry:attempt 2',
      'inner:in',
      'tool run 2',
      'retry:attempt 3',
      'inner:in',
      'tool run 3',
      'inner:out',
      'outer:out',
    ])
  })

  it('re-enters nested stacks too: a repeating layer inside a repeated stack multiplies the runs', async () => {
    let runs = 0
    const twice: Middleware = async function twice(_ctx, next) {
      await next()
      await next()
    }
    await compose([twice, compose([twice])])(fakeContext(), async () => {
      runs++
    })
    expect(runs).toBe(4)
  })

  it('keeps separate invocations of one composed middleware independent, even interleaved', async () => {
    const events: string[] = []
    const gates = { a: deferred(), b: deferred() }
    const layer: Middleware = async (ctx, next) => {
      const id = ctx.idempotencyKey as 'a' | 'b'
      events.push(`${id}:in`)
      await next()
      events.push(`${id}:out`)
    }
    const composed = compose([layer])
    const ctxA = fakeContext()
    ctxA.idempotencyKey = 'a'
    const ctxB = fakeContext()
    ctxB.idempotencyKey = 'b'
    const runA = composed(ctxA, () => gates.a.promise)
    const runB = composed(ctxB, () => gates.b.promise)
    gates.b.resolve()
    await runB
    gates.a.resolve()
    await runA
    expect(events).toEqual(['a:in', 'b:in', 'b:out', 'a:out'])
  })
})

describe('compose: usage errors', () => {
  it('rejects a next() called while the previous one is pending with a MiddlewareUsageError saying to await it', async () => {
    let runs = 0
    let caught: unknown
    const gate = deferred()
    const eager: Middleware = async function eager(_ctx, next) {
      const first = next()
      try {
        await next()
      } catch (err) {
        caught = err
      }
      gate.resolve()
      await first
    }
    await compose([eager])(fakeContext(), async () => {
      runs++
      await gate.promise
    })
    expect(runs).toBe(1)
    expect(caught).toBeInstanceOf(MiddlewareUsageError)
    expect(caught).toMatchObject({
      name: 'MiddlewareUsageError',
      code: 'middleware_usage',
      message: 'middleware "eager" called next() while its previous next() was still pending; await next() before calling it again',
    })
  })

  it('rejects the stack when the usage error escapes, and the abandoned first call leaves no unhandled rejection', async () => {
    const gate = deferred()
    const unhandled = await unhandledRejectionsDuring(async () => {
      const eager: Middleware = async function eager(_ctx, next) {
        void next()
        await next()
      }
      const result = compose([eager])(fakeContext(), async () => {
        await gate.promise
        throw new ToolError('upstream_error', 'the abandoned call failed later')
      })
      await expect(result).rejects.toBeInstanceOf(MiddlewareUsageError)
      gate.resolve()
    })
    expect(unhandled).toEqual([])
  })

  it('rejects a layer that resolves before its awaited next() settles with a MiddlewareUsageError saying what to fix', async () => {
    const gate = deferred()
    const events: string[] = []
    const hasty: Middleware = async function hasty(_ctx, next) {
      await Promise.race([next(), Promise.resolve()])
      events.push('hasty returned')
    }
    const result = compose([hasty])(fakeContext(), async () => {
      await gate.promise
      events.push('inner finished')
    })
    await expect(result).rejects.toThrow(
      new MiddlewareUsageError('middleware "hasty" returned before its next() settled; await next() (or return its promise)'),
    )
    gate.resolve()
    expect(events).toEqual(['hasty returned'])
  })

  it('names an anonymous layer as such in the usage error', async () => {
    const gate = deferred()
    const result = compose([
      async (_ctx, next) => {
        void next()
      },
    ])(fakeContext(), () => gate.promise)
    await expect(result).rejects.toThrow('an anonymous middleware returned before its next() settled')
    gate.resolve()
  })

  it('leaves no unhandled rejection when the abandoned inner call of an early-resolving layer fails later', async () => {
    const gate = deferred()
    const unhandled = await unhandledRejectionsDuring(async () => {
      const hasty: Middleware = async function hasty(_ctx, next) {
        void next()
      }
      const result = compose([hasty])(fakeContext(), async () => {
        await gate.promise
        throw new ToolError('upstream_error', 'late failure')
      })
      await expect(result).rejects.toBeInstanceOf(MiddlewareUsageError)
      gate.resolve()
    })
    expect(unhandled).toEqual([])
  })

  it('leaves no unhandled rejection when a layer stops waiting and throws while its next() is pending', async () => {
    const gate = deferred()
    const unhandled = await unhandledRejectionsDuring(async () => {
      const giveUp: Middleware = async function giveUp(_ctx, next) {
        void next()
        await Promise.resolve()
        throw new ToolError('timeout', 'gave up waiting')
      }
      const result = compose([giveUp])(fakeContext(), async () => {
        await gate.promise
        throw new ToolError('upstream_error', 'late failure nobody waits for')
      })
      await expect(result).rejects.toMatchObject({ code: 'timeout' })
      gate.resolve()
    })
    expect(unhandled).toEqual([])
  })
})

describe('compose: one guard for every layer', () => {
  it('refuses a second next() at once from a layer that carries the old trusted mark, as from any other', async () => {
    const gate = deferred()
    const twice: Middleware = async function twice(_ctx, next) {
      const first = next()
      await next()
      await first
    }
    ;(twice as Middleware & Record<symbol, unknown>)[Symbol.for('shallot.middleware.trusted')] = true
    const result = compose([twice])(fakeContext(), () => gate.promise)
    await expect(result).rejects.toThrow(
      new MiddlewareUsageError(
        'middleware "twice" called next() while its previous next() was still pending; await next() before calling it again',
      ),
    )
    gate.resolve()
  })

  it('guards a composed stack nested in another like any layer, and the layers inside it too', async () => {
    const early: Middleware = async function early(_ctx, next) {
      void next()
    }
    const gate = deferred()
    const stack = compose([async (_ctx, next) => next(), compose([early])])
    await expect(stack(fakeContext(), () => gate.promise)).rejects.toThrow(
      new MiddlewareUsageError('middleware "early" returned before its next() settled; await next() (or return its promise)'),
    )
    gate.resolve()
  })
})

// ---------------------------------------------------------------------------------------------
// Side by side with koa-compose 4.2.0. One table of behaviour cases runs against both
// implementations and must give the same observations; the differences follow, listed exactly.
// ---------------------------------------------------------------------------------------------

interface Ctx {
  events: string[]
  count: number
}
type Layer = (ctx: Ctx, next: () => Promise<unknown>) => unknown
type Composed = (ctx: Ctx, next?: (...args: unknown[]) => unknown) => Promise<unknown>
type Composer = (layers: readonly unknown[]) => Composed

const implementations: ReadonlyArray<readonly [string, Composer]> = [
  ['koa-compose 4.2.0', koaCompose as unknown as Composer],
  ['shallot compose', compose as unknown as Composer],
]

function describeThrown(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : `${typeof err} ${String(err)}`
}

/** Starts a composed call and records how it ended, after whatever the layers recorded. */
async function observe(ctx: Ctx, start: () => Promise<unknown>): Promise<string[]> {
  let running: Promise<unknown>
  try {
    running = start()
  } catch (err) {
    ctx.events.push(`threw synchronously: ${describeThrown(err)}`)
    return ctx.events
  }
  try {
    await running
    ctx.events.push('resolved')
  } catch (err) {
    ctx.events.push(`rejected: ${describeThrown(err)}`)
  }
  return ctx.events
}

const newCtx = (): Ctx => ({ events: [], count: 0 })
const step =
  (name: string): Layer =>
  async (ctx, next) => {
    ctx.events.push(`${name}:in`)
    await next()
    ctx.events.push(`${name}:out`)
  }
const finalStep = (ctx: Ctx) => async () => {
  ctx.events.push('final')
}

interface BehaviourCase {
  readonly name: string
  run(compose: Composer): Promise<string[]>
  readonly expected: readonly string[]
}

const behaviourCases: readonly BehaviourCase[] = [
  {
    name: 'three layers run first-outermost around the final next',
    run: (c) => {
      const ctx = newCtx()
      return observe(ctx, () => c([step('a'), step('b'), step('c')])(ctx, finalStep(ctx)))
    },
    expected: ['a:in', 'b:in', 'c:in', 'final', 'c:out', 'b:out', 'a:out', 'resolved'],
  },
  {
    name: 'an empty list calls the final next',
    run: (c) => {
      const ctx = newCtx()
      return observe(ctx, () => c([])(ctx, finalStep(ctx)))
    },
    expected: ['final', 'resolved'],
  },
  {
    name: 'without a final next, the innermost next() resolves',
    run: (c) => {
      const ctx = newCtx()
      return observe(ctx, () => c([step('a')])(ctx))
    },
    expected: ['a:in', 'a:out', 'resolved'],
  },
  {
    name: 'a composed stack is a layer: it nests and continues into the outer next layer',
    run: (c) => {
      const ctx = newCtx()
      return observe(ctx, () => c([step('a'), c([step('b'), step('c')]), step('d')])(ctx, finalStep(ctx)))
    },
    expected: ['a:in', 'b:in', 'c:in', 'd:in', 'final', 'd:out', 'c:out', 'b:out', 'a:out', 'resolved'],
  },
  {
    name: 'stacks nest two levels deep',
    run: (c) => {
      const ctx = newCtx()
      return observe(ctx, () => c([c([c([step('a')]), step('b')])])(ctx, finalStep(ctx)))
    },
    expected: ['a:in', 'b:in', 'final', 'b:out', 'a:out', 'resolved'],
  },
  {
    name: 'every layer and the final next see one shared context object',
    run: (c) => {
      const ctx = newCtx()
      const counting: Layer = async (seen, next) => {
        seen.events.push(`same context: ${seen === ctx}, count ${seen.count++}`)
        await next()
        seen.events.push(`after next, count ${seen.count}`)
      }
      return observe(ctx, () =>
        c([counting, counting])(ctx, async () => {
          ctx.events.push(`final sees count ${ctx.count}`)
          ctx.count = 10
        }),
      )
    },
    expected: [
      'same context: true, count 0',
      'same context: true, count 1',
      'final sees count 2',
      'after next, count 10',
      'after next, count 10',
      'resolved',
    ],
  },
  {
    name: 'a layer that does not call next short-circuits the inner layers and the final next',
    run: (c) => {
      const ctx = newCtx()
      const stop: Layer = async (x) => {
        x.events.push('stop')
      }
      return observe(ctx, () => c([step('a'), stop, step('never')])(ctx, finalStep(ctx)))
    },
    expected: ['a:in', 'stop', 'a:out', 'resolved'],
  },
  {
    name: 'a synchronous throw from a plain function layer becomes a rejection',
    run: (c) => {
      const ctx = newCtx()
      const thrower: Layer = () => {
        throw new TypeError('sync boom')
      }
      return observe(ctx, () => c([step('a'), thrower])(ctx, finalStep(ctx)))
    },
    expected: ['a:in', 'rejected: TypeError: sync boom'],
  },
  {
    name: 'an async throw propagates outward past layers without a catch, running their finally blocks',
    run: (c) => {
      const ctx = newCtx()
      const guarded =
        (name: string): Layer =>
        async (x, next) => {
          try {
            await next()
            x.events.push(`${name}:after (must not run)`)
          } finally {
            x.events.push(`${name}:finally`)
          }
        }
      return observe(ctx, () =>
        c([guarded('a'), guarded('b')])(ctx, async () => {
          throw new ToolError('upstream_error', 'HTTP 503')
        }),
      )
    },
    expected: ['b:finally', 'a:finally', 'rejected: ToolError: HTTP 503'],
  },
  {
    name: 'an outer layer catches an inner error and recovers',
    run: (c) => {
      const ctx = newCtx()
      const catcher: Layer = async (x, next) => {
        try {
          await next()
        } catch (err) {
          x.events.push(`caught ${describeThrown(err)}`)
        }
      }
      const failing: Layer = async () => {
        throw new Error('inner failed')
      }
      return observe(ctx, () => c([catcher, step('b'), failing])(ctx, finalStep(ctx)))
    },
    expected: ['b:in', 'caught Error: inner failed', 'resolved'],
  },
  {
    name: 'an outer layer replaces an inner error with its own',
    run: (c) => {
      const ctx = newCtx()
      const wrapper: Layer = async (_x, next) => {
        try {
          await next()
        } catch (err) {
          throw new ToolError('tool_panic', `wrapped ${describeThrown(err)}`)
        }
      }
      return observe(ctx, () =>
        c([wrapper])(ctx, async () => {
          throw new RangeError('bad')
        }),
      )
    },
    expected: ['rejected: ToolError: wrapped RangeError: bad'],
  },
  {
    name: 'a throw on the way out (after next) reaches the outer layer',
    run: (c) => {
      const ctx = newCtx()
      const lateThrower: Layer = async (x, next) => {
        await next()
        x.events.push('late thrower throws')
        throw new Error('after next')
      }
      return observe(ctx, () => c([step('a'), lateThrower])(ctx, finalStep(ctx)))
    },
    expected: ['a:in', 'final', 'late thrower throws', 'rejected: Error: after next'],
  },
  {
    name: 'a final next that throws synchronously reaches the innermost layer as a rejection',
    run: (c) => {
      const ctx = newCtx()
      const catcher: Layer = async (x, next) => {
        await next().catch((err: unknown) => x.events.push(`caught ${describeThrown(err)}`))
      }
      return observe(ctx, () =>
        c([catcher])(ctx, () => {
          throw new Error('final threw')
        }),
      )
    },
    expected: ['caught Error: final threw', 'resolved'],
  },
  {
    name: 'a final next that rejects propagates out of the stack',
    run: (c) => {
      const ctx = newCtx()
      return observe(ctx, () => c([step('a')])(ctx, () => Promise.reject(new Error('final rejected'))))
    },
    expected: ['a:in', 'rejected: Error: final rejected'],
  },
  {
    name: 'a LoopError passes through a rethrowing layer untouched',
    run: (c) => {
      const ctx = newCtx()
      const hard = new LoopError('budget_exhausted', 'all 10 steps are spent')
      const rethrower: Layer = async (x, next) => {
        try {
          await next()
        } catch (err) {
          x.events.push(`same object: ${err === hard}, is LoopError: ${LoopError.is(err)}`)
          throw err
        }
      }
      return observe(ctx, () =>
        c([rethrower, step('b')])(ctx, async () => {
          throw hard
        }),
      )
    },
    expected: ['b:in', 'same object: true, is LoopError: true', 'rejected: LoopError: all 10 steps are spent'],
  },
  {
    name: 'a thrown non-Error value propagates as it is',
    run: (c) => {
      const ctx = newCtx()
      return observe(ctx, () =>
        c([step('a')])(ctx, () => {
          throw 'a bare string'
        }),
      )
    },
    expected: ['a:in', 'rejected: string a bare string'],
  },
  {
    name: 'layers returning non-promises (undefined, a number, a thenable) count as done',
    run: (c) => {
      const ctx = newCtx()
      const returnsUndefined: Layer = (x) => {
        x.events.push('undefined layer')
      }
      const returnsNumber: Layer = (x, next) => {
        x.events.push('number layer')
        return next().then(() => 7)
      }
      const returnsThenable: Layer = (x, next) => ({
        // biome-ignore lint/suspicious/noThenProperty: the case is exactly a thenable that is not a Promise
        then(resolve: (value: unknown) => void, reject: (reason: unknown) => void) {
          x.events.push('thenable layer')
          next().then(resolve, reject)
        },
      })
      return observe(ctx, () => c([returnsNumber, returnsThenable, returnsUndefined, step('never')])(ctx, finalStep(ctx)))
    },
    expected: ['number layer', 'thenable layer', 'undefined layer', 'resolved'],
  },
  {
    name: 'a plain function layer may return next() without awaiting it',
    run: (c) => {
      const ctx = newCtx()
      const passThrough: Layer = (x, next) => {
        x.events.push('pass')
        return next()
      }
      return observe(ctx, () => c([passThrough, step('b')])(ctx, finalStep(ctx)))
    },
    expected: ['pass', 'b:in', 'final', 'b:out', 'resolved'],
  },
  {
    name: 'one composed function runs again from scratch on a second invocation',
    run: async (c) => {
      const ctx = newCtx()
      const composed = c([step('a')])
      await composed(ctx, finalStep(ctx))
      return observe(ctx, () => composed(ctx, finalStep(ctx)))
    },
    expected: ['a:in', 'final', 'a:out', 'a:in', 'final', 'a:out', 'resolved'],
  },
  {
    name: 'two interleaved invocations of one composed function stay independent',
    run: async (c) => {
      const ctx = newCtx()
      const composed = c([step('x')])
      const gateA = deferred()
      const gateB = deferred()
      const a = composed(ctx, async () => {
        ctx.events.push('A waits')
        await gateA.promise
      })
      const b = composed(ctx, async () => {
        ctx.events.push('B waits')
        await gateB.promise
      })
      gateB.resolve()
      await b
      ctx.events.push('B done')
      gateA.resolve()
      return observe(ctx, () => a)
    },
    expected: ['x:in', 'A waits', 'x:in', 'B waits', 'x:out', 'B done', 'x:out', 'resolved'],
  },
  {
    name: 'an error inside a nested stack reaches the outer stack layers',
    run: (c) => {
      const ctx = newCtx()
      const catcher: Layer = async (x, next) => {
        try {
          await next()
        } catch (err) {
          x.events.push(`outer caught ${describeThrown(err)}`)
        }
      }
      const failing: Layer = async () => {
        throw new Error('deep')
      }
      return observe(ctx, () => c([catcher, c([step('n'), c([failing])])])(ctx, finalStep(ctx)))
    },
    expected: ['n:in', 'outer caught Error: deep', 'resolved'],
  },
]

/** Compose-time validation: both throw a TypeError synchronously; the messages differ (see the differences). */
const validationCases: ReadonlyArray<readonly [string, unknown]> = [
  ['a number in the list', [async () => {}, 42]],
  ['null in the list', [null]],
  ['an object in the list', [{ handle: async () => {} }]],
  ['a non-array argument', 'not a list'],
  ['no argument at all', undefined],
]

describe.each(implementations)('behaviour shared with koa-compose: %s', (_label, c) => {
  it.each(behaviourCases)('$name', async ({ run, expected }) => {
    expect(await run(c)).toEqual(expected)
  })

  it.each(validationCases)('throws a TypeError at compose time for %s', (_what, input) => {
    expect(() => c(input as readonly unknown[])).toThrow(TypeError)
  })
})

describe('differences from koa-compose 4.2.0, exactly', () => {
  const koa = koaCompose as unknown as Composer
  const ours = compose as unknown as Composer

  function retryingStack(c: Composer) {
    const ctx = newCtx()
    const retry: Layer = async (x, next) => {
      for (let attempt = 1; attempt <= 3; attempt++) {
        try {
          await next()
          return
        } catch (err) {
          x.events.push(`attempt ${attempt}: ${describeThrown(err)}`)
        }
      }
    }
    const failTwice = async () => {
      ctx.count++
      ctx.events.push(`tool run ${ctx.count}`)
      if (ctx.count < 3) throw new Error('HTTP 503')
    }
    return observe(ctx, () => c([retry, step('inner')])(ctx, failTwice))
  }

  it('1. re-entry after settle: koa refuses a second next(), shallot runs the inner layers again', async () => {
    expect(await retryingStack(koa)).toEqual([
      'inner:in',
      'tool run 1',
      'attempt 1: Error: HTTP 503',
      'attempt 2: Error: next() called multiple times',
      'attempt 3: Error: next() called multiple times',
      'resolved',
    ])
    expect(await retryingStack(ours)).toEqual([
      'inner:in',
      'tool run 1',
      'attempt 1: Error: HTTP 503',
      'inner:in',
      'tool run 2',
      'attempt 2: Error: HTTP 503',
      'inner:in',
      'tool run 3',
      'inner:out',
      'resolved',
    ])
  })

  it('2. concurrent next(): both refuse the second call, with different errors', async () => {
    const run = (c: Composer) => {
      const ctx = newCtx()
      const eager: Layer = async function eager(x, next) {
        const first = next()
        await next().catch((err: unknown) => x.events.push(`second next: ${describeThrown(err)}`))
        await first
      }
      return observe(ctx, () => c([eager])(ctx, finalStep(ctx)))
    }
    expect(await run(koa)).toEqual(['final', 'second next: Error: next() called multiple times', 'resolved'])
    expect(await run(ours)).toEqual([
      'final',
      'second next: MiddlewareUsageError: middleware "eager" called next() while its previous next() was still pending; await next() before calling it again',
      'resolved',
    ])
  })

  it('3. resolving before next() settles: koa resolves and leaves the inner call running, shallot rejects', async () => {
    const run = async (c: Composer) => {
      const ctx = newCtx()
      const gate = deferred()
      const hasty: Layer = async function hasty(_x, next) {
        void next()
      }
      const events = await observe(ctx, () =>
        c([hasty])(ctx, async () => {
          await gate.promise
          ctx.events.push('inner finished')
        }),
      )
      gate.resolve()
      await gate.promise
      await Promise.resolve()
      return events
    }
    expect(await run(koa)).toEqual(['resolved', 'inner finished'])
    expect(await run(ours)).toEqual([
      'rejected: MiddlewareUsageError: middleware "hasty" returned before its next() settled; await next() (or return its promise)',
      'inner finished',
    ])
  })

  it('4. values: koa passes return values through next() and out of the stack, shallot resolves undefined', async () => {
    const run = async (c: Composer) => {
      const ctx = newCtx()
      const layer: Layer = async (x, next) => {
        x.events.push(`next() gave ${String(await next())}`)
        return 'outer value'
      }
      const value = await c([layer])(ctx, () => 'final value')
      return [...ctx.events, `stack gave ${String(value)}`]
    }
    expect(await run(koa)).toEqual(['next() gave final value', 'stack gave outer value'])
    expect(await run(ours)).toEqual(['next() gave undefined', 'stack gave undefined'])
  })

  it('5. the final next: koa calls it like a middleware (ctx, next), shallot with the context alone', async () => {
    const run = async (c: Composer) => {
      const ctx = newCtx()
      let received: unknown[] = []
      await c([step('a')])(ctx, (...args: unknown[]) => {
        received = args
      })
      return received.map((arg) => (arg === ctx ? 'ctx' : typeof arg))
    }
    expect(await run(koa)).toEqual(['ctx', 'function'])
    expect(await run(ours)).toEqual(['ctx'])
  })

  it('6. nested arrays in the list: koa flattens them, shallot refuses them with a TypeError naming the index', async () => {
    const ctx = newCtx()
    const nested = [step('a'), [step('b'), step('c')]]
    expect(await observe(ctx, () => koa(nested)(ctx, finalStep(ctx)))).toEqual([
      'a:in',
      'b:in',
      'c:in',
      'final',
      'c:out',
      'b:out',
      'a:out',
      'resolved',
    ])
    expect(() => ours(nested)).toThrow(
      new TypeError('compose(): middleware[1] must be a function (ctx, next) => Promise<void>, got an array'),
    )
  })

  it('7. the compose-time TypeError messages: koa generic, shallot naming the index and what it got', () => {
    expect(() => koa([step('a'), 42])).toThrow(new TypeError('Middleware must be composed of functions!'))
    expect(() => ours([step('a'), 42])).toThrow(
      new TypeError('compose(): middleware[1] must be a function (ctx, next) => Promise<void>, got number 42'),
    )
    expect(() => koa('x' as unknown as unknown[])).toThrow(new TypeError('Middleware stack must be an array!'))
    expect(() => ours('x' as unknown as unknown[])).toThrow(new TypeError('compose() takes an array of middleware functions, got string x'))
  })
})
