import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { StackEvent } from '@shallot/core'
import { type FakeProvider, fakeProvider, type ManualClock, manualClock } from '@shallot/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../cli.js'
import { tempDir } from './run.test-helper.js'
import { waitLines } from './waits.js'

const slowServer = fileURLToPath(new URL('../../fixtures/slow-mcp-server.mjs', import.meta.url))

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  vi.unstubAllEnvs()
})

/** A terminal: what `out` prints (as console.log would) and what the live line writes go to the same screen. */
function fakeTerminal(columns: number) {
  let raw = ''
  return {
    stream: {
      isTTY: true,
      columns,
      write(text: string) {
        raw += text
        return true
      },
    },
    out: (line: string) => {
      raw += `${line}\n`
    },
    raw: () => raw,
    /** The rows as a terminal shows them: `\r` goes back to column 0, `\x1b[2K` blanks the row, text overwrites. */
    screen(): string[] {
      const rows: string[][] = [[]]
      let col = 0
      const text = raw
      for (let i = 0; i < text.length; i++) {
        const row = rows[rows.length - 1] as string[]
        if (text.startsWith('\x1b[2K', i)) {
          row.length = 0
          i += 3
        } else if (text[i] === '\r') col = 0
        else if (text[i] === '\n') {
          rows.push([])
          col = 0
        } else {
          row[col++] = text[i] as string
        }
      }
      return rows.map((r) => r.join(''))
    },
  }
}

async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 4000; i++) {
    if (check()) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`never happened: ${what}`)
}

/** Advances the clock half a second at a time until `check` holds: past every backoff, whatever its jitter. */
async function advanceUntil(clock: ManualClock, check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return
    await clock.advance(500)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`never happened: ${what}`)
}

/** The provider of issue 37: a 429 with Retry-After: 2, then a 503, then the answer. */
async function pushingBack(): Promise<FakeProvider> {
  const fake = await fakeProvider({
    script: [{ fault: 'rate_limit', retryAfterSeconds: 2 }, { fault: 'server_error', status: 503 }, { text: 'Done.' }],
  })
  cleanups.push(() => fake.close())
  return fake
}

function stubEnv(fake: FakeProvider, extra: Record<string, string> = {}) {
  for (const [name, value] of Object.entries({ OPENAI_API_KEY: 'sk-fake-4242', OPENAI_BASE_URL: fake.openaiBaseURL, ...extra }))
    vi.stubEnv(name, value)
}

describe('shallot run shows each wait as it starts', { timeout: 30_000 }, () => {
  it('not on a terminal: one plain line per model retry, with the status and the Retry-After', async () => {
    const fake = await pushingBack()
    stubEnv(fake, { NO_COLOR: '1' })
    const clock = manualClock()
    const out: string[] = []
    const err: string[] = []
    const done = main(['run', '--model', 'openai:test-model', 'Say done'], {
      out: (line) => out.push(line),
      err: (line) => err.push(line),
      status: { isTTY: false, write: () => expect.fail('no live line off a terminal') },
      clock,
    })
    await advanceUntil(clock, () => fake.requests.length === 3, 'the third request')
    expect(await done).toBe(0)
    expect(err).toEqual([])
    const waits = out.filter((l) => l.startsWith('wait'))
    expect(waits).toHaveLength(2)
    expect(waits[0]).toMatch(
      /^wait {2}2\.\d s before attempt 2 of the model openai:test-model: 429 rate limited .*, Retry-After 2 s; within a 120 s outage budget$/,
    )
    expect(waits[1]).toMatch(/^wait {2}\d\.\d s before attempt 3 of the model openai:test-model: 503 .*; within a 120 s outage budget$/)
    // As they started: both before the answer.
    expect(out.findIndex((l) => l.startsWith('completed: Done.'))).toBeGreaterThan(out.indexOf(waits[1] as string))
  })

  it('on a terminal: one live line counting down, cleared when the wait ends, no escape left on the screen', async () => {
    const fake = await pushingBack()
    stubEnv(fake, { NO_COLOR: '1' })
    const clock = manualClock()
    const terminal = fakeTerminal(80)
    const done = main(['run', '--model', 'openai:test-model', 'Say done'], {
      out: terminal.out,
      err: (line) => expect.fail(line),
      status: terminal.stream,
      clock,
    })
    await eventually(() => terminal.raw().includes(': 429 '), 'the first wait drawn')
    const first = terminal.screen().at(-1) as string
    expect(first).toMatch(/^wait {2}2\.\d s before attempt 2 of the model openai:test-model: 429 /)
    expect([...first].length).toBeLessThanOrEqual(79)
    expect(first.endsWith('…')).toBe(true)
    const draws = () => terminal.raw().split('\r\x1b[2K').length
    const before = draws()
    await clock.advance(1000)
    // Redrawn in place a second later: the countdown moved, the row is the same.
    await eventually(() => draws() > before, 'the redraw')
    expect(terminal.screen().filter((row) => row.startsWith('wait'))).toHaveLength(1)
    await advanceUntil(clock, () => fake.requests.length === 3, 'the third request')
    expect(await done).toBe(0)
    const screen = terminal.screen()
    expect(screen.some((row) => row.startsWith('completed: Done.'))).toBe(true)
    // Nothing of any wait is left on the screen, and nothing but the line's own clearing was written.
    expect(screen.filter((row) => row.includes('wait'))).toEqual([])
    const controls = [...terminal.raw().replaceAll('\r\x1b[2K', '')].filter((c) => c !== '\n' && (c < ' ' || c === '\x7f'))
    expect(controls).toEqual([])
    expect(terminal.raw()).not.toContain('\x1b[2m')
  })

  it.each([
    ['TERM=dumb', { TERM: 'dumb', NO_COLOR: '1' }, false],
    ['colours on', { FORCE_COLOR: '1' }, true],
  ])('a terminal with %s: plain lines where it cannot redraw, a dimmed live line where it can', async (_, env, live) => {
    const fake = await pushingBack()
    stubEnv(fake, env)
    if (live) vi.stubEnv('NO_COLOR', undefined)
    const clock = manualClock()
    const terminal = fakeTerminal(80)
    const done = main(['run', '--model', 'openai:test-model', 'Say done'], {
      out: terminal.out,
      err: (line) => expect.fail(line),
      status: terminal.stream,
      clock,
    })
    await advanceUntil(clock, () => fake.requests.length === 3, 'the third request')
    expect(await done).toBe(0)
    expect(terminal.raw().includes('\r\x1b[2K\x1b[2mwait  ')).toBe(live)
    expect(terminal.screen().filter((row) => row.startsWith('wait'))).toHaveLength(live ? 0 : 2)
  })

  it('a tool call running past 2 s gets a line with its elapsed time; the call ends it', async () => {
    const fake = await fakeProvider()
    cleanups.push(() => fake.close())
    const dir = await tempDir()
    cleanups.push(dir.remove)
    const flag = join(dir.root, 'go')
    fake.script({ toolCalls: [{ name: 'wait_for_file', args: { path: flag } }] }, { text: 'It came.' })
    stubEnv(fake, { NO_COLOR: '1' })
    const clock = manualClock()
    // A pty nobody sized reports 0 columns (as `script` opens one): the line is drawn for 80.
    const terminal = fakeTerminal(0)
    const done = main(['run', '--model', 'openai:test-model', '--mcp', `"${process.execPath}" "${slowServer}"`, 'Wait for the file'], {
      out: terminal.out,
      err: (line) => expect.fail(line),
      status: terminal.stream,
      clock,
    })
    await eventually(() => fake.requests.length === 1, 'the first request')
    await advanceUntil(clock, () => terminal.raw().includes('wait_for_file running for 2.'), 'the long-call line')
    await advanceUntil(clock, () => terminal.raw().includes('wait_for_file running for 4.'), 'the line counting up')
    writeFileSync(flag, '')
    expect(await done).toBe(0)
    const screen = terminal.screen()
    expect(screen.filter((row) => row.includes('running for'))).toEqual([])
    expect(screen.some((row) => row.includes('is there'))).toBe(true)
  })

  it("a tool's retry: a plain line with the tool, the attempt, the delay and the code, before the call's result", async () => {
    const fake = await fakeProvider()
    cleanups.push(() => fake.close())
    fake.script({ toolCalls: [{ name: 'flaky_read', args: {} }] }, (request) => ({ text: `Read: ${request.toolResults[0]?.content}` }))
    stubEnv(fake, { NO_COLOR: '1' })
    const clock = manualClock()
    const out: string[] = []
    const done = main(['run', '--model', 'openai:test-model', '--mcp', `"${process.execPath}" "${slowServer}"`, 'Read it'], {
      out: (line) => out.push(line),
      err: (line) => expect.fail(line),
      clock,
    })
    await advanceUntil(clock, () => fake.requests.length === 2, 'the second request')
    expect(await done).toBe(0)
    // (Under load the call may also outlast 2 s of the clock this test moves, and get its running line.)
    const retries = out.filter((l) => l.startsWith('wait') && !l.includes('running for'))
    expect(retries).toHaveLength(1)
    expect(retries[0]).toMatch(/^wait {2}\d\.\d s before attempt 2 \(of 3\) of flaky_read: rate_limited$/)
    const wait = out.indexOf(retries[0] as string)
    expect(out.findIndex((l) => l.includes('completed: Read: answered on call 2'))).toBeGreaterThan(wait)
  })

  it('a turn of tool calls alone prints its number and no empty quotes', async () => {
    const fake = await fakeProvider()
    cleanups.push(() => fake.close())
    fake.script({ toolCalls: [{ name: 'no_such_tool', args: {} }] }, { text: 'Gave up.' })
    stubEnv(fake, { NO_COLOR: '1' })
    const out: string[] = []
    expect(await main(['run', '--model', 'openai:test-model', 'Try'], { out: (l) => out.push(l), err: (l) => expect.fail(l) })).toBe(0)
    expect(out).toContain('turn  1')
    expect(out.join('\n')).not.toContain('“”')
    expect(out).toContain('turn  2  “Gave up.”')
  })
})

describe('the wait lines read what the retry events name', () => {
  const scheduled = (fields: Record<string, unknown>) =>
    ({ type: 'retry.scheduled', at: 0, callId: 'c1', callSeq: 1, tool: 'search', ...fields }) as unknown as StackEvent

  it("a tool retry's own status, Retry-After and attempts allowed, without a classifier's event", () => {
    const out: string[] = []
    const waits = waitLines({ out: (l) => out.push(l), clock: manualClock(), env: {} })
    waits.stackEvent(scheduled({ attempt: 2, maxAttempts: 3, delayMs: 2000, code: 'rate_limited', status: 429, retryAfterMs: 2000 }))
    waits.close()
    expect(out).toEqual(['wait  2.0 s before attempt 2 (of 3) of search: HTTP 429 rate_limited, Retry-After 2.0 s'])
  })

  it.each([
    ['NaN counts', { maxAttempts: Number.NaN, status: Number.NaN, retryAfterMs: Number.NaN }],
    ['strings', { maxAttempts: '3', status: '429', retryAfterMs: '2000' }],
    ['a fraction and a negative', { maxAttempts: 2.5, status: Number.POSITIVE_INFINITY, retryAfterMs: Number.NEGATIVE_INFINITY }],
  ])('leaves out what is not a number it can show: %s', (_name, fields) => {
    const out: string[] = []
    const waits = waitLines({ out: (l) => out.push(l), clock: manualClock(), env: {} })
    waits.stackEvent(scheduled({ attempt: 2, delayMs: 100, code: 'rate_limited', ...fields }))
    waits.close()
    expect(out).toEqual(['wait  0.1 s before attempt 2 of search: rate_limited'])
  })
})

describe("a config's modelMiddleware: runs in shallot run, and its retry says how many attempts it allows", { timeout: 30_000 }, () => {
  it('retry: { maxAttempts: 4 } around the model: "attempt 2 (of 4)" with the status and the Retry-After', async () => {
    const fake = await pushingBack()
    stubEnv(fake, { NO_COLOR: '1' })
    const dir = await tempDir()
    cleanups.push(dir.remove)
    const config = join(dir.root, 'shallot.yaml')
    writeFileSync(config, 'stack:\n  - retry\nmodelMiddleware:\n  - retry: { maxAttempts: 4 }\n')
    const clock = manualClock()
    const out: string[] = []
    const done = main(['run', '--model', 'openai:test-model', '--config', config, 'Say done'], {
      out: (line) => out.push(line),
      err: (line) => expect.fail(line),
      clock,
    })
    await advanceUntil(clock, () => fake.requests.length === 3, 'the third request')
    expect(await done).toBe(0)
    const waits = out.filter((l) => l.startsWith('wait'))
    expect(waits[0]).toMatch(
      /^wait {2}2\.\d s before attempt 2 \(of 4\) of the model openai:test-model: 429 rate limited .*Retry-After 2 s$/,
    )
    expect(waits[1]).toMatch(/^wait {2}\d\.\d s before attempt 3 \(of 4\) of the model openai:test-model: 503 /)
  })
})
