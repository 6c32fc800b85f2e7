// The bench's "full write (distinct args) ÷ full read" target, for the in-memory idempotency store as
// it is in the working tree against the store at another commit, interleaved in one process.
//
//   node bench/store-ab/run.mjs                       # against the typed-array store before bca4383
//   node bench/store-ab/run.mjs --old=HEAD,a15d2e1^ --rounds=21 --timer=cpu
//   node bench/store-ab/run.mjs --old=/tmp/variant.ts   # a file: a variant of the store
//
// Both sides are bundled from the workspace's sources (the "shallot-source" condition, as tests
// resolve them) with rolldown, the old one with packages/idempotency/src/memory-idempotency-store.ts
// (and the helper files it had then) taken from the commit by `git show`. Nothing is built into
// dist. The rows are measured as bench/src/measure.ts's paired(): short rounds back to back, the
// order rotated, each ratio taken within a round, the median of the ratios reported.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { measure } from 'mitata'

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const oldRefs = arg('old', 'a15d2e1^').split(',')
const rounds = Number(arg('rounds', '15'))
const cpuMs = Number(arg('ms', '60'))
// mitata (the bench's timer: wall time, median sample) or cpu (this process's CPU time per call over the round,
// which a loaded machine moves far less: other processes' time is not counted).
const timer = arg('timer', 'mitata')

const here = dirname(fileURLToPath(import.meta.url))
const root = resolve(here, '../..')
const src = join(root, 'packages/idempotency/src')
const git = (...args) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 })

/** The store at `ref` in a directory of its own: its file, and every non-test file of the package then that is gone now (its helpers). */
function extract(ref, dir) {
  mkdirSync(dir)
  // A file instead of a commit: a variant of the store to try, its imports resolved in the package.
  if (existsSync(ref)) {
    const text = readFileSync(ref, 'utf8').replace(/from '\.\/([\w-]+)\.js'/g, (_, name) => `from '${join(src, `${name}.ts`)}'`)
    writeFileSync(join(dir, 'memory-idempotency-store.ts'), text)
    return join(dir, 'memory-idempotency-store.ts')
  }
  const then = git('ls-tree', '--name-only', `${ref}:packages/idempotency/src/`).split('\n').filter(Boolean)
  const taken = then.filter((f) => f === 'memory-idempotency-store.ts' || (!existsSync(join(src, f)) && !f.includes('.test.')))
  for (const file of taken) {
    const text = git('show', `${ref}:packages/idempotency/src/${file}`).replace(/from '\.\/([\w-]+)\.js'/g, (all, name) =>
      taken.includes(`${name}.ts`) ? all : `from '${join(src, `${name}.ts`)}'`,
    )
    writeFileSync(join(dir, file), text)
  }
  return join(dir, 'memory-idempotency-store.ts')
}
const work = mkdtempSync(join(tmpdir(), 'store-ab-'))

const requireVite = createRequire(createRequire(join(root, 'package.json')).resolve('vite'))
const { rolldown } = await import(pathToFileURL(requireVite.resolve('rolldown')).href)

/** The workload bundled as one file; with `storeFile`, the idempotency package imports its memory store from there. */
async function bundle(name, storeFile) {
  const plugins = storeFile
    ? [
        {
          name: 'old-memory-store',
          resolveId(source, importer) {
            if (source === './memory-idempotency-store.js' && importer?.startsWith(src)) return storeFile
            return null
          },
        },
      ]
    : []
  const build = await rolldown({
    input: join(here, 'workload.ts'),
    platform: 'node',
    resolve: { conditionNames: ['shallot-source', 'import', 'node', 'default'] },
    external: [/^node:/, 'pino'],
    plugins,
    logLevel: 'silent',
  })
  // Beside the bench, so what stays external (pino) resolves from its node_modules; dist/ is ignored by git.
  const file = join(here, 'dist', `${name}.mjs`)
  await build.write({ file, format: 'esm' })
  return import(pathToFileURL(file).href)
}

const sides = { now: (await bundle('now')).rows() }
for (const [i, ref] of oldRefs.entries()) sides[ref] = (await bundle(`old-${i}`, extract(ref, join(work, `old-${i}`)))).rows()
rmSync(work, { recursive: true, force: true }) // the extracted sources; the bundles stay in dist/ for a profiler
const cases = Object.entries(sides).flatMap(([side, r]) => [
  { name: `${side} read`, fn: r.read },
  { name: `${side} write`, fn: r.write },
])

// Warm-up as the bench does (and well past the default store's 10,000 records, so every write evicts).
const options = { min_cpu_time: cpuMs * 1e6, batch_samples: 1024, gc: false }
for (const c of cases) for (let i = 0; i < 20_000; i++) await c.fn()
for (const c of cases) await measure(c.fn, options)
for (const [side, r] of Object.entries(sides)) {
  if (r.writes() < 10_000) throw new Error(`${side}: only ${r.writes()} writes ran the tool during warm-up`)
}
/** CPU nanoseconds per call, calls in slices of 1,024 until the round has used `cpuMs` of CPU. */
async function cpuPerCall(fn) {
  const start = process.cpuUsage()
  let calls = 0
  let used = 0
  while (used < cpuMs * 1000) {
    for (let i = 0; i < 1024; i++) await fn()
    calls += 1024
    const { user, system } = process.cpuUsage(start)
    used = user + system
  }
  return (used * 1000) / calls
}
const perRound = Object.fromEntries(cases.map((c) => [c.name, []]))
for (let round = 0; round < rounds; round++) {
  for (let k = 0; k < cases.length; k++) {
    const c = cases[(k + round) % cases.length]
    perRound[c.name].push(timer === 'cpu' ? await cpuPerCall(c.fn) : (await measure(c.fn, options)).p50)
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const ns = (n) => (n < 1000 ? `${n.toFixed(0)} ns` : `${(n / 1000).toFixed(2)} µs`)
console.log(
  `${rounds} rounds of ${cpuMs} ms CPU per row, timed by ${timer}; load average ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(', ')}`,
)
for (const side of Object.keys(sides)) {
  const reads = perRound[`${side} read`]
  const writes = perRound[`${side} write`]
  const ratios = writes.map((w, i) => w / reads[i])
  console.log(
    `  ${side.padEnd(10)} read ${ns(median(reads)).padStart(9)}  write ${ns(median(writes)).padStart(9)}  write ÷ read ${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
  )
}
