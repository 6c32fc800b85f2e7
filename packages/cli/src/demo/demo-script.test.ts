import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../../../', import.meta.url))
const manifest = (dir: string) =>
  JSON.parse(readFileSync(`${root}${dir}/package.json`, 'utf8')) as {
    name: string
    scripts?: Record<string, string>
    dependencies?: Record<string, string>
  }

/** The workspace packages `@shallot/cli` needs at run time, itself included: what `shallot demo` loads from dist. */
function runtimeClosure(): Set<string> {
  const dirs = new Map<string, string>()
  for (const line of execFileSync('git', ['ls-files', 'packages/*/package.json'], { cwd: root, encoding: 'utf8' }).trim().split('\n')) {
    const dir = line.replace(/\/package\.json$/, '')
    dirs.set(manifest(dir).name, dir)
  }
  const seen = new Set<string>()
  const visit = (name: string) => {
    const dir = dirs.get(name)
    if (dir === undefined || seen.has(name)) return
    seen.add(name)
    for (const [dep, range] of Object.entries(manifest(dir).dependencies ?? {})) if (range.startsWith('workspace:')) visit(dep)
  }
  visit('@shallot/cli')
  return seen
}

describe('pnpm demo', () => {
  it('builds the cli and what it loads, not the whole workspace', { timeout: 60_000 }, () => {
    const script = manifest('.').scripts?.demo ?? ''
    const build = /^turbo (run build[^&]*)&& node packages\/cli\/dist\/bin\.js demo$/.exec(script)?.[1]
    expect(build, script).toBeDefined()
    const turbo = createRequire(`${root}package.json`).resolve('turbo/bin/turbo')
    const args = (build as string).trim().split(/\s+/)
    const plan = JSON.parse(execFileSync(process.execPath, [turbo, ...args, '--dry=json'], { cwd: root, encoding: 'utf8' })) as {
      tasks: Array<{ package: string }>
    }
    const built = new Set(plan.tasks.map((t) => t.package))
    const needed = runtimeClosure()
    // Everything the demo loads is built, and nothing else: no example, bench or integration it never imports.
    expect([...needed].filter((name) => !built.has(name))).toEqual([])
    expect([...built].filter((name) => !needed.has(name))).toEqual([])
  })
})
