import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '@shallot/config'

/** One measured load: the median of a few, and what the loader said. */
export interface ConfigLoadRow {
  readonly name: string
  readonly bytes: number
  readonly ms: number
  /** CPU time of the same load (all threads): steadier than wall time on a shared machine. */
  readonly cpuMs: number
  /** `loaded`, or the number of problems the ConfigError listed. */
  readonly outcome: string
}

/** `n` tools, each with an effect and its own retry options; `wrong` makes every retry option invalid. */
function documentText(n: number, format: 'json' | 'yaml', wrong: boolean): string {
  const attempts = wrong ? '"many"' : '3'
  if (format === 'json') {
    const tools = Array.from({ length: n }, (_, i) => `    "tool_${i}": { "effect": "read", "retry": { "maxAttempts": ${attempts} } }`)
    return `{\n  "stack": ["panic-catcher", "retry", "timeout"],\n  "tools": {\n${tools.join(',\n')}\n  }\n}\n`
  }
  const tools = Array.from({ length: n }, (_, i) => `  tool_${i}:\n    effect: read\n    retry: { maxAttempts: ${attempts} }\n`)
  return `stack: [panic-catcher, retry, timeout]\ntools:\n${tools.join('')}`
}

async function loadOnce(file: string): Promise<{ ms: number; cpuMs: number; outcome: string }> {
  const cpu = process.cpuUsage()
  const start = performance.now()
  let outcome = 'loaded'
  try {
    await loadConfig(file, { maxBytes: 64 * 1024 * 1024 })
  } catch (err) {
    if (!ConfigError.is(err)) throw err
    outcome = `${err.issues.length} problems listed`
  }
  const ms = performance.now() - start
  const used = process.cpuUsage(cpu)
  return { ms, cpuMs: (used.user + used.system) / 1000, outcome }
}

/**
 * Scenario 10: loading a config with 40,000 tool overrides, valid and with every override wrong, as
 * JSON and as YAML, and the same at 10,000 to show the cost grows with the file (about ×4), not
 * with its square (×16).
 */
export async function configLoad(runs = 3): Promise<ConfigLoadRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'shallot-bench-config-'))
  const rows: ConfigLoadRow[] = []
  try {
    for (const format of ['json', 'yaml'] as const) {
      for (const n of [10_000, 40_000]) {
        for (const wrong of [false, true]) {
          const text = documentText(n, format, wrong)
          const file = join(dir, `tools-${n}-${wrong ? 'wrong' : 'valid'}.${format}`)
          writeFileSync(file, text)
          const loads: Array<Awaited<ReturnType<typeof loadOnce>>> = []
          for (let i = 0; i < runs; i++) loads.push(await loadOnce(file))
          loads.sort((a, b) => a.ms - b.ms)
          const median = loads[Math.floor(loads.length / 2)] as (typeof loads)[number]
          rows.push({
            name: `${format}, ${n.toLocaleString('en')} overrides, ${wrong ? 'all wrong' : 'valid'}`,
            bytes: Buffer.byteLength(text),
            ...median,
          })
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}

/** Prints the rows, with the 40,000 / 10,000 ratio of each kind of file. */
export function printConfigLoad(rows: readonly ConfigLoadRow[]): void {
  console.log('\nscenario 10: load a config with many tool overrides (median)')
  for (const row of rows) {
    const small = rows.find((r) => r.name === row.name.replace('40,000', '10,000'))
    const ratio = row.name.includes('40,000') && small !== undefined ? `  (×${(row.ms / small.ms).toFixed(1)} for 4× the overrides)` : ''
    const times = `${row.ms.toFixed(0).padStart(6)} ms (cpu ${row.cpuMs.toFixed(0).padStart(5)} ms)`
    console.log(`  ${row.name.padEnd(40)} ${(row.bytes / 1e6).toFixed(1)} MB  ${times}  ${row.outcome}${ratio}`)
  }
}
