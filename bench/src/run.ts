import { writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { configLoad, printConfigLoad } from './config-load.js'
import { heapRetained, sustained } from './endurance.js'
import { formatNs, printTable, type Row } from './measure.js'
import { resilienceLayers } from './resilience.js'
import { classifierPathological, eachLayer, fullStack, peers, sanitizerPathological } from './scenarios.js'

const quick = process.argv.includes('--quick')
const docsPath = process.argv.find((a) => a.startsWith('--docs='))?.slice('--docs='.length)

const peerRows = await peers()
printTable('peers', peerRows, 'bare await')
const full = await fullStack()
printTable('scenarios 1, 2, 3, 5: the full default stack', [...peerRows, ...full], 'koa-compose 7 no-op')
const layers = await eachLayer()
printTable('scenario 4: each layer alone', [...peerRows.slice(0, 2), ...layers], 'koa-compose 7 no-op')
const resilience = await resilienceLayers()
printTable('scenario 9: bulkhead, fallback, hedging alone', [...peerRows.slice(0, 2), ...resilience], 'koa-compose 7 no-op')
const classifier = await classifierPathological()
printTable('scenario 8: classify 100 KB pathological messages', classifier, classifier[0]?.name ?? '')
const configRows = await configLoad(quick ? 1 : 3)
printConfigLoad(configRows)
const sanitizer = await sanitizerPathological()
printTable(
  'scenario 11: core sanitize() on 100 KB pathological text, no cap (target: each well under 5 ms)',
  sanitizer,
  sanitizer[0]?.name ?? '',
)
const heap = await heapRetained(quick ? 100_000 : 1_000_000)
console.log(`\nscenario 6: heap retained after ${heap.calls} distinct calls: ${heap.retainedMB.toFixed(2)} MB`)
const throughput = await sustained(quick ? 3 : 10)
console.log(`scenario 7: calls per second by second: ${throughput.perSecond.join(', ')} (last/first ${throughput.firstToLast.toFixed(2)})`)

const p50 = (rows: readonly Row[], name: string) => rows.find((r) => r.name === name)?.p50ns ?? Number.NaN
const koa = p50(peerRows, 'koa-compose 7 no-op')
const cockatiel = p50(peerRows, 'cockatiel retry+breaker+timeout')
const happy = p50(full, 'shallot: 7 layers, read')
const figures = {
  machine: { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
  p50ns: Object.fromEntries(
    [...peerRows, ...full, ...layers, ...resilience, ...classifier, ...sanitizer].map((r) => [r.name, Math.round(r.p50ns)]),
  ),
  ratios: { fullStackVsKoa7: happy / koa, cockatielVsFullStack: cockatiel / happy },
  heapRetainedMB: heap.retainedMB,
  heapCalls: heap.calls,
  throughputPerSecond: throughput.perSecond,
  throughputLastOverFirst: throughput.firstToLast,
  configLoadMs: Object.fromEntries(configRows.map((r) => [r.name, Math.round(r.ms)])),
}
console.log(
  `\nfull stack = ${figures.ratios.fullStackVsKoa7.toFixed(2)}× koa-compose-7 (target ≤ 2), cockatiel = ${figures.ratios.cockatielVsFullStack.toFixed(1)}× full stack (target ≥ 8)`,
)
console.log(JSON.stringify(figures))

if (docsPath !== undefined) {
  const table = (rows: readonly Row[], base: number, baseName: string) =>
    [
      '| measured | median | ratio to ' + baseName + ' |',
      '|---|---:|---:|',
      ...rows.map((r) => `| ${r.name} | ${formatNs(r.p50ns)} | ${(r.p50ns / base).toFixed(2)}× |`),
    ].join('\n')
  const doc = `# Benchmarks

Written by \`pnpm bench -- --docs=docs/benchmarks.md\` from one run; do not edit by hand.

Machine: ${figures.machine.cpu}, ${figures.machine.cores} cores, ${figures.machine.memoryGiB} GiB, Node ${figures.machine.node}.
Medians from mitata; every row of a table was measured in the same process run.

## Full default stack against the peers (scenarios 1, 2, 3, 5)

${table([...peerRows, ...full], koa, 'koa-compose 7 no-op')}

Full stack / koa-compose-7: **${figures.ratios.fullStackVsKoa7.toFixed(2)}×** (target ≤ 2×). Cockatiel's trio / full stack: **${figures.ratios.cockatielVsFullStack.toFixed(1)}×** (target ≥ 8×).

## Each layer alone (scenario 4)

${table([...peerRows.slice(0, 2), ...layers], koa, 'koa-compose 7 no-op')}

## Bulkhead, fallback and hedging alone (scenario 9)

${table([...peerRows.slice(0, 2), ...resilience], koa, 'koa-compose 7 no-op')}

## Endurance (scenarios 6 and 7)

- Heap retained after ${heap.calls.toLocaleString('en')} calls with distinct arguments: **${heap.retainedMB.toFixed(2)} MB** (target < 20 MB).
- Calls per second, second by second: ${throughput.perSecond.join(', ')}; last / first = **${throughput.firstToLast.toFixed(2)}** (target ≥ 0.9).

## Classifier on pathological input (scenario 8)

${table(classifier, classifier[0]?.p50ns ?? 1, 'the first row')}

## Core sanitizer on pathological input (scenario 11)

\`sanitize()\` with no cap, so every pattern runs over the whole 100 KB; target: each row well under 5 ms. The last two
rows are what a successful output costs the stack at the default 20,000-character cap.

${table(sanitizer, sanitizer[0]?.p50ns ?? 1, 'the first row')}

Raw figures:

\`\`\`json
${JSON.stringify(figures, null, 2)}
\`\`\`
`
  writeFileSync(docsPath, doc)
  console.log(`wrote ${docsPath}`)
}
