import { writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { configLoad, printConfigLoad } from './config-load.js'
import { concurrentRuns, heapRetained, simPerCall, sustained } from './endurance.js'
import { type Case, formatNs, interleave, printTable, type Row } from './measure.js'
import { resilienceCases, resilienceOptionCases } from './resilience.js'
import {
  AGENT,
  agentCase,
  COCKATIEL,
  classifierPathological,
  eachLayerCases,
  fullStackCases,
  KOA,
  peerCases,
  READ,
  READ_SIGNAL,
  sanitizerPathological,
  WRITE,
} from './scenarios.js'

const quick = process.argv.includes('--quick')
const docsPath = process.argv.find((a) => a.startsWith('--docs='))?.slice('--docs='.length)
const rounds = quick ? 3 : 7
const load = loadavg()

// Every row that is compared with another is measured in the same interleaved rounds, in this process.
const peers = peerCases()
const full = await fullStackCases()
const agent = await agentCase()
const layers = eachLayerCases()
const resilience = [...resilienceCases(), ...resilienceOptionCases()]
const all: Case[] = [...peers, ...full, agent, ...layers, ...resilience]
const measured = await interleave(all, rounds)
const pick = (cases: readonly Case[]) => cases.map((c) => measured.find((r) => r.name === c.name) as Row)
const peerRows = pick(peers)
const fullRows = [...pick(full), ...pick([agent])]
const layerRows = pick(layers)
const resilienceRows = pick(resilience)
const headline = peerRows.slice(0, 2)

printTable('peers', peerRows, 'bare await')
printTable('scenarios 1, 2, 3, 5: the full default stack', [...peerRows, ...fullRows], KOA)
printTable('scenario 4: each layer alone', [...headline, ...layerRows], KOA)
printTable(
  'scenario 9: bulkhead, fallback, hedging alone; half-open sampling, retry hooks, convergence',
  [...headline, ...resilienceRows],
  KOA,
)
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
const heapCalls = quick ? 100_000 : 1_000_000
const heap = { read: await heapRetained('read', heapCalls), write: await heapRetained('write', heapCalls) }
console.log(
  `\nscenario 6: heap retained after ${heapCalls} distinct calls: reads ${heap.read.retainedMB.toFixed(2)} MB, writes ${heap.write.retainedMB.toFixed(2)} MB`,
)
const seconds = quick ? 3 : 10
const throughput = { read: await sustained('read', seconds), write: await sustained('write', seconds) }
for (const kind of ['read', 'write'] as const) {
  const t = throughput[kind]
  console.log(`scenario 7 (${kind}s): calls per CPU second: ${t.perSecond.join(', ')} (last/first ${t.firstToLast.toFixed(2)})`)
}
const concurrent = await concurrentRuns(10_000)
console.log(
  `scenario 12: ${concurrent.runs} concurrent agent runs, each blocked in one tool call: ${concurrent.heapMB.toFixed(1)} MB of heap`,
)
const sim = await simPerCall(quick ? 200 : 1000)
console.log(
  `scenario 13: shallot sim --runs ${sim.runs}: ${sim.calls} simulated calls in ${sim.cpuMs.toFixed(0)} ms CPU (median of 3 after a warm-up; ${sim.cpuMsRange[0].toFixed(0)}–${sim.cpuMsRange[1].toFixed(0)} ms), ${sim.usPerCall.toFixed(2)} µs per call`,
)

const p50 = (name: string) => measured.find((r) => r.name === name)?.p50ns ?? Number.NaN
const ratios = {
  fullReadVsKoa7: p50(READ) / p50(KOA),
  cockatielVsFullRead: p50(COCKATIEL) / p50(READ),
  fullWriteVsFullRead: p50(WRITE) / p50(READ),
  readWithSignalVsRead: p50(READ_SIGNAL) / p50(READ),
}
const fmt = (n: number, digits = 2) => n.toFixed(digits)
const targets: Array<[string, string, string, string, boolean]> = [
  [
    'full default stack, read ÷ koa-compose 7 async no-op',
    '6.6×',
    `${fmt(ratios.fullReadVsKoa7)}×`,
    '≤ 2.5× (stretch 2×)',
    ratios.fullReadVsKoa7 <= 2.5,
  ],
  [
    'cockatiel wrap(retry, breaker, timeout) ÷ full read',
    '2.7×',
    `${fmt(ratios.cockatielVsFullRead)}×`,
    '≥ 6× (stretch 8×)',
    ratios.cockatielVsFullRead >= 6,
  ],
  ['full write (distinct args) ÷ full read', '3.5–5×', `${fmt(ratios.fullWriteVsFullRead)}×`, '≤ 2.5×', ratios.fullWriteVsFullRead <= 2.5],
  [
    'createAgent turn, one tool call, full stack (a whole run: the tool turn and the answer)',
    '29 µs',
    formatNs(p50(AGENT)),
    '≤ 8 µs',
    p50(AGENT) <= 8_000,
  ],
  ['10,000 concurrent runs each in one tool call, heap', '157 MB', `${fmt(concurrent.heapMB, 1)} MB`, '≤ 60 MB', concurrent.heapMB <= 60],
  ...(['read', 'write'] as const).map((kind): [string, string, string, string, boolean] => [
    `heap after ${heapCalls.toLocaleString('en')} distinct calls / sustained last÷first second, ${kind}s`,
    kind === 'read' ? '−0.2 MB / 1.2' : 'not measured',
    `${fmt(heap[kind].retainedMB, 1)} MB / ${fmt(throughput[kind].firstToLast)}`,
    '< 20 MB / ≥ 0.9',
    heap[kind].retainedMB < 20 && throughput[kind].firstToLast >= 0.9,
  ]),
  [`\`shallot sim --runs ${sim.runs}\` per simulated call (CPU)`, '9.1 µs', `${fmt(sim.usPerCall)} µs`, '≤ 5 µs', sim.usPerCall <= 5],
]
console.log('\ntargets (issue #16)')
for (const [what, before, now, target, met] of targets) {
  console.log(`  ${met ? 'met ' : 'MISS'}  ${what.padEnd(92)} before ${before.padEnd(13)} now ${now.padEnd(16)} target ${target}`)
}
console.log(`load average when the run started: ${load.map((l) => l.toFixed(1)).join(', ')} on ${cpus().length} cores`)

const figures = {
  machine: { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
  loadAverage: load,
  rounds,
  p50ns: Object.fromEntries([...measured, ...classifier, ...sanitizer].map((r) => [r.name, Math.round(r.p50ns)])),
  ratios,
  heapRetainedMB: { read: heap.read.retainedMB, write: heap.write.retainedMB },
  heapCalls,
  throughputPerSecond: { read: throughput.read.perSecond, write: throughput.write.perSecond },
  throughputLastOverFirst: { read: throughput.read.firstToLast, write: throughput.write.firstToLast },
  concurrentRunsHeapMB: concurrent.heapMB,
  sim,
  configLoadMs: Object.fromEntries(configRows.map((r) => [r.name, Math.round(r.ms)])),
}
console.log(JSON.stringify(figures))

if (docsPath !== undefined) {
  const table = (rows: readonly Row[], base: number, baseName: string) =>
    [
      `| measured | median | fastest – slowest round | ratio to ${baseName} |`,
      '|---|---:|---:|---:|',
      ...rows.map(
        (r) => `| ${r.name} | ${formatNs(r.p50ns)} | ${formatNs(r.minns)} – ${formatNs(r.maxns)} | ${(r.p50ns / base).toFixed(2)}× |`,
      ),
    ].join('\n')
  const koa = p50(KOA)
  const doc = `# Benchmarks

Written by \`pnpm bench -- --docs=docs/benchmarks.md\` from one run; do not edit by hand.

Machine: ${figures.machine.cpu}, ${figures.machine.cores} cores, ${figures.machine.memoryGiB} GiB, Node ${figures.machine.node};
load average ${load.map((l) => l.toFixed(1)).join(', ')} when the run started (the machine is shared: read the ratios, not the times).
The rows of scenarios 1–5 and 9 were measured in ${rounds} interleaved rounds in this one process (every row once per
round, the order rotated); each figure is the median round's mitata median, with the fastest and slowest round beside it.

## Targets (issue #16)

| measured | before | this run | target | |
|---|---:|---:|---:|---|
${targets.map(([what, before, now, target, met]) => `| ${what} | ${before} | ${now} | ${target} | ${met ? 'met' : '**missed**'} |`).join('\n')}

## Full default stack against the peers (scenarios 1, 2, 3, 5)

${table([...peerRows, ...fullRows], koa, KOA)}

## Each layer alone (scenario 4)

${table([...headline, ...layerRows], koa, KOA)}

## Bulkhead, fallback and hedging alone; half-open sampling, retry hooks and convergence (scenario 9)

${table([...headline, ...resilienceRows], koa, KOA)}

## Endurance (scenarios 6, 7, 12, 13)

- Heap retained after ${heapCalls.toLocaleString('en')} calls with distinct arguments: reads **${fmt(heap.read.retainedMB)} MB**, writes **${fmt(heap.write.retainedMB)} MB** (target < 20 MB).
- Calls per CPU second, second by second: reads ${throughput.read.perSecond.join(', ')} (last / first **${fmt(throughput.read.firstToLast)}**); writes ${throughput.write.perSecond.join(', ')} (last / first **${fmt(throughput.write.firstToLast)}**) (target ≥ 0.9).
- 10,000 agent runs at once, each blocked in its one tool call: **${fmt(concurrent.heapMB, 1)} MB** of heap (target ≤ 60 MB).
- \`shallot sim --runs ${sim.runs} --seed 1\`: ${sim.calls.toLocaleString('en')} simulated calls in ${fmt(sim.cpuMs, 0)} ms of CPU (the median of three runs after a warm-up; fastest to slowest ${fmt(sim.cpuMsRange[0], 0)}–${fmt(sim.cpuMsRange[1], 0)} ms), **${fmt(sim.usPerCall)} µs per call** (target ≤ 5 µs).

## Classifier on pathological input (scenario 8)

${table(classifier, classifier[0]?.p50ns ?? 1, 'the first row')}

## Config loading (scenario 10)

| file | size | median | CPU | outcome |
|---|---:|---:|---:|---|
${configRows.map((r) => `| ${r.name} | ${(r.bytes / 1e6).toFixed(1)} MB | ${r.ms.toFixed(0)} ms | ${r.cpuMs.toFixed(0)} ms | ${r.outcome} |`).join('\n')}

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
