import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main } from '../cli.js'
import type { RunRecord } from './record.js'

// Debian's chromium, installed by .ci/services; playwright-core never downloads a browser.
const CHROMIUM = '/usr/bin/chromium'
// The README's picture is refreshed only on request (SHALLOT_SCREENSHOT=1), so a test run leaves the tree clean.
const SCREENSHOT = process.env.SHALLOT_SCREENSHOT === '1' ? resolve(import.meta.dirname, '../../../../docs/run-timeline.png') : undefined
const PAYLOAD = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">"onerror=window.__pwned=3 x="`

const dir = mkdtempSync(join(tmpdir(), 'shallot-timeline-'))
let browser: BrowserContext | undefined

async function quiet(argv: string[]): Promise<number> {
  return main(argv, { out: () => {}, err: () => {} })
}

/** Opens a page with every request but the file itself failed, and the console watched. */
async function open(file: string): Promise<{ page: Page; errors: string[]; requests: string[] }> {
  if (browser === undefined) throw new Error('the browser did not start')
  const page = await browser.newPage()
  const errors: string[] = []
  const requests: string[] = []
  const url = pathToFileURL(file).href
  await page.route('**/*', async (route) => {
    if (route.request().url() === url) return route.continue()
    requests.push(route.request().url())
    await route.abort()
  })
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') errors.push(m.text())
  })
  page.on('pageerror', (e) => errors.push(e.message))
  page.on('request', (r) => {
    if (r.url() !== url) requests.push(r.url())
  })
  await page.goto(url, { waitUntil: 'load' })
  return { page, errors, requests }
}

beforeAll(async () => {
  // A fresh profile in a temp dir: nothing of another run's browser state is read.
  browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
    viewport: { width: 1640, height: 900 },
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
    timeout: 15_000,
  })
}, 20_000)

afterAll(async () => {
  await browser?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('the HTML timeline in a real browser', () => {
  it('shows every tool call of the demo run, offline and without console errors, and is photographed for the README', async () => {
    const record = join(dir, 'run.json')
    const html = join(dir, 'run.html')
    expect(await quiet(['demo', '--record', record, '--html', html])).toBe(0)
    const run = JSON.parse(readFileSync(record, 'utf8')) as RunRecord
    const calls = run.turns.flatMap((t) => t.calls)
    const { page, errors, requests } = await open(html)
    try {
      const shown = await page.$$eval('g.call', (gs) => gs.map((g) => [g.getAttribute('data-call'), g.getAttribute('data-tool')]))
      expect(shown).toEqual(calls.map((c) => [c.callId, c.name]))
      expect(shown.length).toBe(12)
      expect(await page.locator('tr[data-call-row]').count()).toBe(calls.length)
      // Each kind of layer event is on the axis: retries, the timeouts, the reconciled write, the breaker, the refusals.
      const kinds = await page.$$eval('circle.marker', (cs) => cs.map((c) => c.getAttribute('data-event')))
      expect(kinds.length).toBe(run.events.length)
      for (const type of ['retry.scheduled', 'timeout.expired', 'idempotency.reconciled', 'circuit-breaker.state', 'stuck-loop.refused'])
        expect(kinds).toContain(type)
      expect(await page.locator('g.call[data-soft="true"]').count()).toBe(calls.filter((c) => c.result?.ok === false).length)
      expect(await page.locator('.hard-stop-label').textContent()).toBe('■ hard stop: loop_detected')
      expect(await page.locator('#failure-report pre').textContent()).toContain('Why: the model kept repeating a call')
      const shot = await page.screenshot({ fullPage: true, ...(SCREENSHOT === undefined ? {} : { path: SCREENSHOT }) })
      expect(shot.byteLength).toBeGreaterThan(10_000)
    } finally {
      await page.close()
    }
    expect(errors).toEqual([])
    expect(requests).toEqual([])
  }, 20_000)

  it('fits a 1400 px window: the hard stop and the last turns are in view, no horizontal scrollbar hides them', async () => {
    const html = join(dir, 'narrow.html')
    expect(await quiet(['demo', '--html', html])).toBe(0)
    const { page, errors } = await open(html)
    try {
      await page.setViewportSize({ width: 1400, height: 900 })
      const section = await page.$eval('section.timeline', (s) => ({
        scroll: s.scrollWidth,
        client: s.clientWidth,
        right: s.getBoundingClientRect().right,
      }))
      expect(section.scroll).toBeLessThanOrEqual(section.client)
      expect(await page.$eval('html', (h) => h.scrollWidth)).toBeLessThanOrEqual(1400)
      // The stop, the last turn's row and the label right of every call end inside the timeline's box.
      const rightmost = await page.$$eval('.hard-stop-label, g.turn:last-of-type, g.call > text:last-of-type', (els) =>
        els.map((e) => [e.getAttribute('class') ?? e.tagName, Math.round(e.getBoundingClientRect().right)] as const),
      )
      expect(rightmost.length).toBeGreaterThan(12)
      expect(rightmost.filter(([, right]) => right > section.right)).toEqual([])
      // Nor does the picture cut them: each call's outcome label (✗ repeated_failure) ends inside the drawing.
      const svgRight = await page.$eval('section.timeline > svg', (e) => Math.round(e.getBoundingClientRect().right))
      expect(rightmost.filter(([, right]) => right > svgRight)).toEqual([])
    } finally {
      await page.close()
    }
    expect(errors).toEqual([])
  }, 20_000)

  it('says in its header what the report says: completed turns and calls, and the one in flight at the stop', async () => {
    const record = join(dir, 'counts.json')
    const html = join(dir, 'counts.html')
    expect(await quiet(['demo', '--record', record, '--html', html])).toBe(0)
    const run = JSON.parse(readFileSync(record, 'utf8')) as RunRecord
    const completed = /Completed: (\d+) turns, (\d+) tool calls/.exec(run.stop?.report.text ?? '')
    expect(completed?.slice(1)).toEqual(['11', '11'])
    const { page } = await open(html)
    try {
      const meta = (await page.locator('header .meta').first().textContent()) ?? ''
      expect(meta).toContain('11 turns · 11 tool calls completed · 1 in flight at the hard stop')
      expect(await page.locator('#failure-report pre').textContent()).not.toContain('agent.resume(')
    } finally {
      await page.close()
    }
  }, 20_000)

  it('runs nothing from the run: script and onerror payloads in tool output, names, args and error text stay text', async () => {
    const record = join(dir, 'hostile.json')
    expect(await quiet(['demo', '--record', record])).toBe(0)
    const run = JSON.parse(readFileSync(record, 'utf8')) as RunRecord
    const hostile = {
      ...run,
      runId: PAYLOAD,
      task: PAYLOAD,
      turns: run.turns.map((t) => ({
        ...t,
        text: PAYLOAD,
        notes: { [PAYLOAD]: PAYLOAD },
        calls: t.calls.map((c) => ({
          ...c,
          name: PAYLOAD,
          args: PAYLOAD,
          ...(c.result ? { result: { ok: c.result.ok, content: PAYLOAD } } : {}),
        })),
      })),
      events: run.events.map((e) => ({ ...e, type: PAYLOAD, tool: PAYLOAD, fields: { ...e.fields, code: PAYLOAD } })),
      ...(run.stop ? { stop: { ...run.stop, kind: PAYLOAD, message: PAYLOAD, report: { ...run.stop.report, text: PAYLOAD } } } : {}),
    }
    writeFileSync(record, JSON.stringify(hostile))
    const html = join(dir, 'hostile.html')
    expect(await quiet(['report', record, '-o', html])).toBe(0)
    const { page, errors, requests } = await open(html)
    try {
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined()
      expect(await page.locator('script, img, [onerror]').count()).toBe(0)
      expect(await page.locator('#failure-report pre').textContent()).toBe(PAYLOAD)
      expect(await page.$$eval('g.call', (gs) => gs.map((g) => g.getAttribute('data-tool')))).toContain(PAYLOAD)
      expect(await page.title()).toBe(`shallot run ${PAYLOAD}`)
    } finally {
      await page.close()
    }
    expect(errors).toEqual([])
    expect(requests).toEqual([])
  }, 20_000)
})
