import { createRun, createStack, LoopError } from '@shallot/core'
import { describe, expect, it, vi } from 'vitest'
import { POLICY_STATE_KEY, type PolicyOptions, policy } from './index.js'
import { countedTools } from './test-tools.js'

function setup(options: PolicyOptions) {
  const { runs, tools } = countedTools()
  const layer = policy(options)
  const stack = createStack({ tools, middleware: [layer] })
  return { runs, stack, layer, tools }
}

describe('policy: deny rules', () => {
  it('denies by exact name and by glob; the tool never runs and the model reads the reason and a hint', async () => {
    const { runs, stack } = setup({ rules: [{ action: 'deny', tools: 'delete_*', reason: 'nothing is deleted in this workspace' }] })
    const a = await stack.dispatch({ id: '1', name: 'delete_user', args: { id: 'u1' } })
    const b = await stack.dispatch({ id: '2', name: 'delete_file', args: { path: '/x' } })
    expect(a.error?.code).toBe('blocked_by_policy')
    expect(a.content).toContain("call to 'delete_user' blocked by policy: nothing is deleted in this workspace")
    expect(a.content).toContain("'delete_user' is not allowed for this call")
    expect(b.error?.code).toBe('blocked_by_policy')
    expect(runs.delete_user + runs.delete_file).toBe(0)
    expect((await stack.dispatch({ id: '3', name: 'read_file', args: { path: '/x' } })).ok).toBe(true)
    expect(a.trace.map((e) => e.type)).toContain('policy.denied')
  })

  it('denies write tools only, by effect', async () => {
    const { runs, stack } = setup({ rules: [{ action: 'deny', effect: 'write', reason: 'this agent is read-only' }] })
    const write = await stack.dispatch({ id: '1', name: 'transfer', args: { to: 'bob', amountCents: 1 } })
    const read = await stack.dispatch({ id: '2', name: 'read_file', args: { path: '/a' } })
    expect(write.content).toContain('blocked by policy: this agent is read-only')
    expect(read.ok).toBe(true)
    expect(runs).toMatchObject({ transfer: 0, read_file: 1 })
  })

  it('denies by argument predicate and says what would be allowed', async () => {
    const { runs, stack } = setup({
      rules: [
        { action: 'allow', tools: 'transfer', args: [{ arg: 'amountCents', lte: 10_000 }] },
        { action: 'deny', tools: 'transfer', reason: 'transfers over $100 are not allowed' },
      ],
    })
    const big = await stack.dispatch({ id: '1', name: 'transfer', args: { to: 'bob', amountCents: 25_000 } })
    expect(big.content).toContain("call to 'transfer' blocked by policy: transfers over $100 are not allowed")
    expect(big.error?.hint).toBe('allowed: transfer when amountCents <= 10000')
    expect((await stack.dispatch({ id: '2', name: 'transfer', args: { to: 'bob', amountCents: 10_000 } })).ok).toBe(true)
    expect(runs.transfer).toBe(1)
  })

  it('denies by run state: at most 2 writes per run, counted in run.state so a resumed run keeps its count', async () => {
    const { runs, stack } = setup({
      rules: [{ id: 'writes', action: 'deny', effect: 'write', maxPerRun: 2, reason: 'at most 2 writes per run' }],
    })
    const run = createRun()
    const send = (id: string) => stack.dispatch({ id, name: 'transfer', args: { to: 'bob', amountCents: 1 } }, { run })
    expect((await send('1')).ok).toBe(true)
    expect((await send('2')).ok).toBe(true)
    const third = await send('3')
    expect(third.content).toContain('blocked by policy: at most 2 writes per run')
    expect(third.error?.hint).toContain('this run has used its 2 calls of this kind')
    expect(runs.transfer).toBe(2)
    expect(run.state[POLICY_STATE_KEY]).toEqual({ counts: { writes: 2 } })
    // Reads are not counted, and a fresh run starts from zero; a resumed one from its snapshot.
    expect((await stack.dispatch({ id: '4', name: 'read_file', args: { path: '/a' } }, { run })).ok).toBe(true)
    const resumed = createRun({ state: JSON.parse(JSON.stringify(run.state)) })
    expect((await stack.dispatch({ id: '6', name: 'transfer', args: { to: 'b', amountCents: 1 } }, { run: resumed })).ok).toBe(false)
    expect((await stack.dispatch({ id: '7', name: 'transfer', args: { to: 'b', amountCents: 1 } }, { run: createRun() })).ok).toBe(true)
  })

  it('lets the first matching rule win, and default: deny refuses what no rule allows', async () => {
    const { runs, stack } = setup({
      default: 'deny',
      rules: [
        { action: 'allow', tools: 'read_file', args: [{ arg: 'path', under: '/srv/data' }] },
        { action: 'deny', tools: 'read_file', reason: 'never' },
        { action: 'allow', tools: 'read_file' },
      ],
    })
    expect((await stack.dispatch({ id: '1', name: 'read_file', args: { path: '/srv/data/a.txt' } })).ok).toBe(true)
    expect((await stack.dispatch({ id: '2', name: 'read_file', args: { path: '/etc/passwd' } })).content).toContain(
      'blocked by policy: never',
    )
    const other = await stack.dispatch({ id: '3', name: 'tag', args: { label: 'x' } })
    expect(other.content).toContain('blocked by policy: no rule allows it')
    expect(other.error?.hint).toContain("no rule allows 'tag'")
    expect(runs).toMatchObject({ read_file: 1, tag: 0 })
  })

  it('leaves unknown tools and invalid arguments to the dispatcher: nothing runs either way', async () => {
    const { runs, stack } = setup({
      rules: [{ action: 'allow', tools: 'transfer', args: [{ arg: 'amountCents', lte: 10 }] }],
      default: 'deny',
    })
    expect((await stack.dispatch({ id: '1', name: 'transfr', args: {} })).error?.code).toBe('unknown_tool')
    expect((await stack.dispatch({ id: '2', name: 'transfer', args: { amountCents: 'lots' } })).error?.code).toBe('invalid_arguments')
    expect(runs.transfer).toBe(0)
  })
})

describe('policy: argument predicates under hostile input', () => {
  it('normalises .. before checking a path is under the root, and refuses relative or NUL-bearing paths', async () => {
    const { runs, stack } = setup({
      default: 'deny',
      rules: [{ action: 'allow', tools: 'read_file', args: [{ arg: 'path', under: '/srv/data' }] }],
    })
    const verdicts: Record<string, boolean> = {}
    for (const path of [
      '/srv/data/a',
      '/srv/data',
      '/srv/data/../secrets',
      '/srv/data/x/../../etc',
      '/srv/database',
      'srv/data/a',
      '/srv/data/a\0',
      '..\\..\\etc\\passwd',
      '/srv/data/./b/../c',
      '//srv/data/a',
    ]) {
      verdicts[path] = (await stack.dispatch({ id: path, name: 'read_file', args: { path } })).ok
    }
    expect(verdicts).toEqual({
      '/srv/data/a': true,
      '/srv/data': true,
      '/srv/data/../secrets': false,
      '/srv/data/x/../../etc': false,
      '/srv/database': false,
      'srv/data/a': false,
      '/srv/data/a\0': false,
      '..\\..\\etc\\passwd': false,
      '/srv/data/./b/../c': true,
      '//srv/data/a': true,
    })
    expect(runs.read_file).toBe(4)
  })

  it('compares hosts as the URL parser reads them: userinfo, lookalike letters, case and trailing dots', async () => {
    const { stack } = setup({
      default: 'deny',
      rules: [{ action: 'allow', tools: 'fetch_url', args: [{ arg: 'url', hostIn: ['api.example.com', '*.cdn.example.com'] }] }],
    })
    const verdicts: Record<string, boolean> = {}
    for (const url of [
      'https://api.example.com/v1',
      'https://API.Example.COM./v1',
      'https://api.example.com@evil.com/',
      'https://evil.com/?https://api.example.com',
      'https://\u0430pi.example.com/', // Cyrillic a: punycode, a different host
      'https://api.example.com.evil.com/',
      'https://img.cdn.example.com/x.png',
      'https://cdn.example.com.evil/',
      'not a url',
      'https://api\u3002example\u3002com/', // ideographic full stops fold to dots: the same host
    ]) {
      verdicts[url] = (await stack.dispatch({ id: url, name: 'fetch_url', args: { url } })).ok
    }
    expect(verdicts).toEqual({
      'https://api.example.com/v1': true,
      'https://API.Example.COM./v1': true,
      'https://api.example.com@evil.com/': false,
      'https://evil.com/?https://api.example.com': false,
      'https://\u0430pi.example.com/': false,
      'https://api.example.com.evil.com/': false,
      'https://img.cdn.example.com/x.png': true,
      'https://cdn.example.com.evil/': false,
      'not a url': false,
      'https://api\u3002example\u3002com/': true,
    })
  })

  it('fails closed on NaN, Infinity, strings and objects in a numeric predicate, whatever the rule says', async () => {
    const { runs, tools } = countedTools()
    const loose = { ...(tools[5] as (typeof tools)[5]), name: 'loose' }
    const stack = createStack({
      tools: [loose],
      middleware: [policy({ rules: [{ action: 'deny', tools: 'loose', args: [{ arg: 'label', gt: 100 }], reason: 'too big' }] })],
    })
    for (const label of [Number.NaN, Number.POSITIVE_INFINITY, '1e9', { valueOf: 1 }, [101]]) {
      const result = await stack.dispatch({ id: String(label), name: 'loose', args: { label } })
      expect(result.error?.code, String(label)).toBe('blocked_by_policy')
      expect(result.content).toContain('the call cannot be checked (argument label is not a finite number), so it is refused')
    }
    expect((await stack.dispatch({ id: 'ok', name: 'loose', args: { label: 5 } })).ok).toBe(true)
    expect(runs.tag).toBe(1)
  })

  it('reads own argument fields only: constructor, toString and prototype keys are never read from a prototype', async () => {
    expect(() => policy({ rules: [{ action: 'deny', args: [{ arg: '__proto__', in: ['x'] }] }] })).toThrow(
      /rules\[0\]\.args\[0\]\.arg: must not name __proto__/,
    )
    expect(() => policy({ rules: [{ action: 'deny', args: [{ arg: 'a.constructor', in: ['x'] }] }] })).toThrow(/constructor/)
    const { runs, stack } = setup({
      rules: [{ action: 'deny', tools: 'tag', args: [{ arg: 'label.toString', matches: '.*' }], reason: 'no' }],
    })
    expect((await stack.dispatch({ id: '1', name: 'tag', args: { label: {} } })).ok).toBe(true)
    // A prototype-polluting payload is refused by the stack before any layer sees it.
    const polluted = await stack.dispatch({ id: '2', name: 'tag', args: JSON.parse('{"label":1,"__proto__":{"x":1}}') })
    expect(polluted.ok).toBe(false)
    expect(runs.tag).toBe(1)
  })

  it('checks a huge argument array in bounded time with in and refuses regexes that can blow up', async () => {
    expect(() => policy({ rules: [{ action: 'deny', args: [{ arg: 'x', matches: '(a+)+$' }] }] })).toThrow(/nest quantifiers/)
    expect(() => policy({ rules: [{ action: 'deny', args: [{ arg: 'x', matches: '(a)\\1' }] }] })).toThrow(/backreferences/)
    expect(() => policy({ rules: [{ action: 'deny', args: [{ arg: 'x', matches: '[' }] }] })).toThrow(/not a valid regular expression/)
    expect(() => policy({ rules: [{ action: 'deny', args: [{ arg: 'x', in: Array.from({ length: 1001 }, (_, i) => i) }] }] })).toThrow(/in/)
    expect(() => policy({ rules: [{ action: 'deny', args: [{ arg: 'x', lte: 1, gte: 0 }] }] })).toThrow(/exactly one/)
    const { runs, stack } = setup({
      rules: [
        { action: 'allow', tools: 'tag', args: [{ arg: 'label', in: ['bug', 'feature'] }] },
        { action: 'allow', tools: 'tag', args: [{ arg: 'label', matches: '[a-z]{1,20}-[0-9]+' }] },
        { action: 'deny', tools: 'tag', reason: 'unknown label' },
      ],
    })
    expect((await stack.dispatch({ id: '1', name: 'tag', args: { label: 'bug' } })).ok).toBe(true)
    expect((await stack.dispatch({ id: '2', name: 'tag', args: { label: 'team-42' } })).ok).toBe(true)
    expect((await stack.dispatch({ id: '3', name: 'tag', args: { label: Array.from({ length: 50_000 }, () => 'bug') } })).ok).toBe(false)
    expect((await stack.dispatch({ id: '4', name: 'tag', args: { label: 'team-42\nrm -rf' } })).ok).toBe(false)
    expect((await stack.dispatch({ id: '5', name: 'tag', args: { label: 'a'.repeat(20_000) } })).content).toContain('cannot be checked')
    expect(runs.tag).toBe(2)
  })

  it('denies, logs and emits when a code predicate throws or answers something that is not a boolean', async () => {
    const { runs, tools } = countedTools()
    const error = vi.fn()
    const logger = { debug() {}, info() {}, warn() {}, error, child: () => logger }
    const events: string[] = []
    const stack = createStack({
      tools,
      logger,
      middleware: [
        policy({
          rules: [
            {
              action: 'allow',
              tools: 'transfer',
              when: (args) => (args as { to: { length: number } }).to.length.toFixed(0).startsWith('9'),
            },
            { action: 'allow', tools: 'tag', when: () => 'yes' as unknown as boolean },
            { action: 'allow', tools: 'read_file', when: async (args) => (args as { path: string }).path.startsWith('/ok') },
          ],
          default: 'deny',
        }),
      ],
    })
    stack.on((event) => events.push(event.type))
    const thrown = await stack.dispatch({ id: '1', name: 'transfer', args: { to: 'bob', amountCents: 1 } })
    const crash = policy({
      rules: [
        {
          action: 'deny',
          when: () => {
            throw new Error('boom')
          },
        },
      ],
    })
    const crashed = await createStack({ tools, middleware: [crash], logger }).dispatch({
      id: '2',
      name: 'transfer',
      args: { to: 'bob', amountCents: 1 },
    })
    expect(thrown.ok).toBe(false)
    expect(crashed.content).toContain("the call cannot be checked (rule rule-1's check failed), so it is refused")
    expect(error).toHaveBeenCalledWith(expect.objectContaining({ rule: 'rule-1' }), 'policy: a rule check threw; the call is denied')
    expect((await stack.dispatch({ id: '3', name: 'tag', args: { label: 1 } })).content).toContain(
      'its check returned string, not a boolean',
    )
    expect((await stack.dispatch({ id: '4', name: 'read_file', args: { path: '/ok/a' } })).ok).toBe(true)
    expect(events).toContain('policy.undecidable')
    expect(runs).toMatchObject({ transfer: 0, tag: 0, read_file: 1 })
  })
})

describe('policy: the tool description says what is restricted', () => {
  it('annotates restricted tools with the rules and the run-state count, and leaves the others alone', async () => {
    const { layer, tools, stack } = setup({
      rules: [
        { action: 'deny', tools: 'transfer', args: [{ arg: 'amountCents', gt: 10_000 }], reason: 'over $100' },
        { id: 'writes', action: 'deny', effect: 'write', maxPerRun: 3, reason: 'at most 3 writes per run' },
        { action: 'approve', tools: 'delete_*', reason: 'deleting needs a person' },
      ],
    })
    const run = createRun()
    await stack.dispatch({ id: '1', name: 'transfer', args: { to: 'bob', amountCents: 5 } }, { run })
    const describe = (name: string) => stack.describeTool(tools.find((t) => t.name === name) as (typeof tools)[number], run)
    expect(describe('transfer')).toBe(
      'Policy: blocked when amountCents > 10000 (over $100); blocked when after 3 such calls in this run (1 used) (at most 3 writes per run); otherwise allowed.',
    )
    expect(describe('delete_user')).toBe(
      "Policy: blocked when after 3 such calls in this run (1 used) (at most 3 writes per run); needs a person's approval (deleting needs a person).",
    )
    expect(describe('read_file')).toBeUndefined()
    expect(policy({ rules: [{ action: 'deny' }], describe: false }).describeTool).toBeUndefined()
    expect(layer.describeTool).toBeTypeOf('function')
  })
})

describe('policy: options', () => {
  it('refuses bad options naming the option and the value', () => {
    expect(() => policy({ rules: [{ action: 'block' as 'deny' }] })).toThrow(/rules\[0\]\.action.*got "block"/)
    expect(() => policy({ rules: [{ action: 'deny', tools: 'a b' }] })).toThrow(/tools/)
    expect(() => policy({ rules: [{ action: 'deny', args: [{ arg: 'p', under: 'relative' }] }] })).toThrow(/absolute path/)
    expect(() => policy({ rules: [{ action: 'deny', args: [{ arg: 'u', hostIn: ['https://x.com/'] }] }] })).toThrow(/host name/)
    expect(() => policy({ rules: [{ action: 'deny', args: [{ arg: 'n', lte: Number.NaN }] }] })).toThrow(/lte/)
    expect(() => policy({ rules: [{ action: 'deny', args: [{ arg: 'n', lte: Number.POSITIVE_INFINITY }] }] })).toThrow(/lte/)
    expect(() => policy({ approvalTimeoutMs: 0 })).toThrow(/approvalTimeoutMs/)
    expect(() =>
      policy({
        rules: [
          { id: 'a', action: 'deny' },
          { id: 'a', action: 'allow' },
        ],
      }),
    ).toThrow(/two rules have the id "a"/)
    expect(() => policy({ onApproval: 'ask' as never })).toThrow(/onApproval/)
  })

  it('rethrows a LoopError from inside untouched', async () => {
    const { tools } = countedTools()
    const hard = new LoopError('fatal', 'stop')
    const stack = createStack({ tools, middleware: [policy({ rules: [{ action: 'allow' }] }), async () => Promise.reject(hard)] })
    await expect(stack.dispatch({ id: '1', name: 'tag', args: { label: 1 } })).rejects.toBe(hard)
  })
})
