import { mkdtempSync, readFileSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createAgent } from '@shallot/agent'
import { defineTool } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { main } from '../cli.js'
import { renderHtml } from './html.js'
import { MAX_RECORD_BYTES, parseRecord, RecordError, readRecord } from './record.js'
import { recordRun } from './record-run.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-record-'))

async function run(...argv: string[]) {
  const out: string[] = []
  const err: string[] = []
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

async function demoRecord(): Promise<string> {
  const file = join(dir, `demo-${Math.random().toString(36).slice(2)}.json`)
  expect((await run('demo', '--record', file)).code).toBe(0)
  return file
}

describe('shallot demo --record', () => {
  it('writes every turn, call, attempt and layer event of the run on one time axis, and reads back as written', async () => {
    const file = await demoRecord()
    const record = await readRecord(file)
    expect(record).toEqual(JSON.parse(readFileSync(file, 'utf8')))
    expect(record.status).toBe('stopped')
    expect(record.stop?.kind).toBe('loop_detected')
    expect(record.stop?.report.text).toContain('Why: the model kept repeating a call')
    const calls = record.turns.flatMap((t) => t.calls)
    expect(calls.map((c) => c.name)).toEqual([
      'read_file',
      'read_file',
      'search_docs',
      'charge_card',
      'status_page',
      'status_page',
      'status_cache',
      ...Array(5).fill('read_file'),
    ])
    expect(calls.find((c) => c.name === 'search_docs')?.attempts).toBe(3)
    // The refund timed out after it landed; the provider's lookup told idempotency so, and the call ended ok.
    expect(calls.find((c) => c.name === 'charge_card')?.result?.ok).toBe(true)
    expect(record.events.filter((e) => e.type === 'idempotency.reconciled').map((e) => e.fields.outcome)).toEqual(['applied'])
    // The turn that stopped the run is not in the transcript; the model's answer still gives its words and arguments.
    const last = record.turns.at(-1)
    expect(last).toMatchObject({ inFlight: true, text: 'Again.', calls: [{ name: 'read_file', args: '{"path":"logs/build.log"}' }] })
    expect(last?.calls[0]?.result).toBeUndefined()
    expect(record.turns.find((t) => t.notes.status_page !== undefined)?.turn).toBe(6)
    // One time axis: turns and events in order, all within the run.
    const times = record.turns.map((t) => t.at ?? -1)
    expect(times).toEqual([...times].sort((a, b) => a - b))
    for (const e of record.events) expect(e.at).toBeGreaterThanOrEqual(0)
    for (const e of record.events) expect(e.at).toBeLessThanOrEqual(record.durationMs)
    expect(record.events.filter((e) => e.type === 'retry.scheduled')).toHaveLength(3)
    expect(record.events.some((e) => e.type === 'circuit-breaker.state' && e.fields.to === 'open')).toBe(true)
  })

  it('writes the HTML timeline with --html, and report renders the same page from the record', async () => {
    const record = join(dir, 'same.json')
    const html = join(dir, 'same.html')
    const { code, out } = await run('demo', '--record', record, '--html', html)
    expect(code).toBe(0)
    expect(out).toContain(`wrote the timeline to ${html}`)
    const again = join(dir, 'again.html')
    expect((await run('report', record, '-o', again)).code).toBe(0)
    expect(readFileSync(again, 'utf8')).toBe(readFileSync(html, 'utf8'))
  })
})

describe('recordRun', () => {
  it('records a completed run, and leaves turn times out when the model was not wrapped', async () => {
    const clock = manualClock(1_000_000)
    const echo = defineTool({
      name: 'echo',
      description: 'echo',
      input: z.object({ text: z.string() }),
      effect: 'read',
      execute: ({ text }) => text,
    })
    const recorder = recordRun({ clock })
    const agent = createAgent({
      model: scriptedModel([{ toolCalls: [{ name: 'echo', args: { text: 'hi' } }] }, { text: 'done' }]),
      tools: [echo],
      clock,
    })
    recorder.listen(agent.stack)
    const outcome = await agent.run({ input: 'say hi' })
    const record = recorder.finish(outcome)
    expect(record).toMatchObject({ status: 'completed', output: 'done', task: 'say hi' })
    expect(record.stop).toBeUndefined()
    expect(record.turns[0]?.at).toBeUndefined()
    expect(record.turns[0]?.calls[0]).toMatchObject({
      name: 'echo',
      args: '{"text":"hi"}',
      attempts: 1,
      result: { ok: true, content: 'hi' },
    })
    expect(parseRecord(JSON.parse(JSON.stringify(record)), 'r.json')).toEqual(JSON.parse(JSON.stringify(record)))
    expect(renderHtml(record)).toContain('<h2>Completed</h2><pre>done</pre>')
  })
})

describe('reading a hostile or corrupt record', () => {
  const write = (name: string, text: string) => {
    const file = join(dir, name)
    writeFileSync(file, text)
    return file
  }
  const good = async () => JSON.parse(readFileSync(await demoRecord(), 'utf8'))

  it('names the file for a missing file, non-JSON, and the wrong shape', async () => {
    await expect(readRecord(join(dir, 'nope.json'))).rejects.toThrow(`no such file: ${join(dir, 'nope.json')}`)
    const notJson = write('not.json', '{"format": ')
    await expect(readRecord(notJson)).rejects.toThrow(new RegExp(`^${notJson} is not JSON`))
    const wrong = write('wrong.json', JSON.stringify({ ...(await good()), version: 2 }))
    await expect(readRecord(wrong)).rejects.toThrow(`${wrong} is not a shallot run record at version`)
    const deep = write('deep.json', `${'['.repeat(50_000)}${']'.repeat(50_000)}`)
    await expect(readRecord(deep)).rejects.toThrow(RecordError)
  })

  it('refuses a record over the size cap without reading it', async () => {
    const huge = write('huge.json', '')
    truncateSync(huge, MAX_RECORD_BYTES + 1)
    await expect(readRecord(huge)).rejects.toThrow(`${huge} is ${MAX_RECORD_BYTES + 1} bytes; a run record is at most`)
  })

  it('refuses Infinity, __proto__ keys, oversized strings and lists, and pollutes nothing', async () => {
    const base = await good()
    const infinite = JSON.stringify({ ...base, durationMs: 1 }).replace('"durationMs":1', '"durationMs":1e400')
    await expect(readRecord(write('inf.json', infinite))).rejects.toThrow('at durationMs')
    const proto = JSON.stringify(base).replace('"fields":{', '"fields":{"__proto__":{"polluted":1},')
    await expect(readRecord(write('proto.json', proto))).rejects.toThrow('proto.json holds a "__proto__" key')
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    const long = { ...base, task: 'x'.repeat(20_001) }
    await expect(readRecord(write('long.json', JSON.stringify(long)))).rejects.toThrow('at task')
    const many = { ...base, events: Array(50_002).fill(base.events[0]) }
    await expect(readRecord(write('many.json', JSON.stringify(many)))).rejects.toThrow('at events')
    const extra = { ...base, script: '<script>' }
    await expect(readRecord(write('extra.json', JSON.stringify(extra)))).rejects.toThrow(RecordError)
  })

  it('shallot report: a corrupt record or missing -o exits 2 with one line naming the file', async () => {
    const bad = write('bad.json', '[1,2,3]')
    const corrupt = await run('report', bad, '-o', join(dir, 'x.html'))
    expect(corrupt.code).toBe(2)
    expect(corrupt.err.split('\n')[0]).toBe(
      `shallot: ${bad} is not a shallot run record: Invalid input: expected object, received array. Write one with shallot demo --record ${bad}`,
    )
    const noOutput = await run('report', bad)
    expect(noOutput.code).toBe(2)
    expect(noOutput.err).toContain('report needs an output file')
    const unwritable = await run('report', await demoRecord(), '-o', join(dir, 'no', 'such', 'dir.html'))
    expect(unwritable.code).toBe(2)
    expect(unwritable.err.split('\n')[0]).toContain(`cannot write ${join(dir, 'no', 'such', 'dir.html')}: ENOENT`)
  })
})

describe('recordRun().model', () => {
  it('keeps the name and provider of the model it wraps, so the report names the model and not "model"', async () => {
    const named = { name: 'gpt-test', provider: 'openai.chat', generate: async () => ({ text: 'done', toolCalls: [] }) }
    const wrapped = recordRun().model(named)
    expect([wrapped.name, wrapped.provider]).toEqual(['gpt-test', 'openai.chat'])
    expect(Object.keys(recordRun().model({ generate: named.generate }))).toEqual(['generate'])
  })
})
