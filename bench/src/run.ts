import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { aiSdkModelCases } from './ai-sdk-model.js'
import { configLoad, printConfigLoad } from './config-load.js'
import { CONTEXT_BARE, CONTEXT_BUDGET, CONTEXT_REACTIVE, CONTEXT_TURNS, contextEditingCases } from './context-editing.js'
import { concurrentRuns, heapRetained, simPerCall, sustained } from './endurance.js'
import { guardCases, REDACT_1MB, REDACT_2MB } from './guards.js'
import { type Case, formatNs, interleave, paired, printTable, type Row } from './measure.js'
import { MODEL_CORE, MODEL_DEFAULT, MODEL_TURNS, modelStackCases } from './model-stack.js'
import { resilienceCases, resilienceOptionCases } from './resilience.js'
import {
  AGENT,
  AGENT_LONG,
  agentCase,
  COCKATIEL,
  classifierPathological,
  eachLayerCases,
  fullStackCases,
  KOA,
  LONG_TURNS,
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
// One long-lived signal for every run, as a server's shutdown signal would be.
const agentSignal = await agentCase(1, new AbortController().signal)
const layers = eachLayerCases()
const resilience = [
  ...resilienceCases(),
  ...resilienceOptionCases(),
  ...contextEditingCases(),
  ...modelStackCases(),
  ...aiSdkModelCases(),
  ...guardCases(),
]
const all: Case[] = [...peers, ...full, agent, agentSignal, ...layers, ...resilience]
const measured = await interleave(all, rounds)
const pick = (cases: readonly Case[]) => cases.map((c) => measured.find((r) => r.name === c.name) as Row)
const peerRows = pick(peers)
const fullRows = [...pick(full), ...pick([agent, agentSignal])]
const layerRows = pick(layers)
const resilienceRows = pick(resilience)
const headline = peerRows.slice(0, 2)
// The target rows again, alone: many short rounds back to back, every ratio taken within a round.
// The long run is measured only here: a turn's cost is the difference between runs of 11 and 1 tool turns.
const longAgent = await agentCase(LONG_TURNS)
const targetNames = [KOA, READ, WRITE, COCKATIEL, AGENT]
const targetRounds = quick ? 5 : 15
const pair = await paired([...targetNames.map((name) => all.find((c) => c.name === name) as Case), longAgent], targetRounds)

printTable('peers', peerRows, 'bare await')
printTable('scenarios 1, 2, 3, 5: the full default stack', [...peerRows, ...fullRows], KOA)
printTable('scenario 4: each layer alone', [...headline, ...layerRows], KOA)
printTable(
  'scenario 9: bulkhead, fallback, hedging alone; half-open sampling, retry hooks, convergence; context editing; redact, coalesce',
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
  console.log(
    `scenario 7 (${kind}s): calls per CPU second: ${t.perSecond.join(', ')} (last/first ${t.firstToLast.toFixed(2)}; relative to koa-compose 7 in the same second ${t.relativeFirstToLast.toFixed(2)})`,
  )
}
const concurrent = await concurrentRuns(10_000)
console.log(
  `scenario 12: ${concurrent.runs} concurrent agent runs, each blocked in one tool call: ${concurrent.heapMB.toFixed(1)} MB of heap`,
)
const sim = await simPerCall(quick ? 200 : 1000)
console.log(
  `scenario 13: shallot sim --runs ${sim.runs}: ${sim.calls} simulated calls in ${sim.cpuMs.toFixed(0)} ms CPU (median of 3 after a warm-up; ${sim.cpuMsRange[0].toFixed(0)}–${sim.cpuMsRange[1].toFixed(0)} ms), ${sim.usPerCall.toFixed(2)} µs per call`,
)
await (await import('./fleet.js')).fleetTable(quick)

const p50 = (name: string) => measured.find((r) => r.name === name)?.p50ns ?? Number.NaN
const fmt = (n: number, digits = 2) => n.toFixed(digits)
const readVsKoa = pair.ratio(READ, KOA)
const cockatielVsRead = pair.ratio(COCKATIEL, READ)
const writeVsRead = pair.ratio(WRITE, READ)
const agentVsKoa = pair.ratio(AGENT, KOA)
const agentNs = pair.median(AGENT)
const agentNsRange = [Math.min(...(pair.perRound[AGENT] ?? [])), Math.max(...(pair.perRound[AGENT] ?? []))]
// One more tool turn, round by round: (a run of 11 tool turns − a run of 1) ÷ 10.
const turnNsPerRound = (pair.perRound[AGENT_LONG] ?? []).map(
  (long, i) => (long - (pair.perRound[AGENT]?.[i] ?? Number.NaN)) / (LONG_TURNS - 1),
)
const sortedTurns = [...turnNsPerRound].sort((a, b) => a - b)
const turnNs = sortedTurns[Math.floor(sortedTurns.length / 2)] ?? Number.NaN
const turnNsRange = [sortedTurns[0] ?? Number.NaN, sortedTurns[sortedTurns.length - 1] ?? Number.NaN]
const ratios = {
  fullReadVsKoa7: readVsKoa.median,
  cockatielVsFullRead: cockatielVsRead.median,
  fullWriteVsFullRead: writeVsRead.median,
  agentRunVsKoa7: agentVsKoa.median,
  agentTurnNs: turnNs,
  readWithSignalVsRead: p50(READ_SIGNAL) / p50(READ),
}
const spread = (r: { min: number; max: number }) => `${fmt(r.min)}–${fmt(r.max)}`
const targets: Array<[string, string, string, string, boolean]> = [
  [
    'full default stack, read ÷ koa-compose 7 async no-op',
    '6.6×',
    `${fmt(readVsKoa.median)}× (${spread(readVsKoa)})`,
    '≤ 2.5× (stretch 2×)',
    readVsKoa.median <= 2.5,
  ],
  [
    'cockatiel wrap(retry, breaker, timeout) ÷ full read',
    '2.7×',
    `${fmt(cockatielVsRead.median)}× (${spread(cockatielVsRead)})`,
    '≥ 6× (stretch 8×)',
    cockatielVsRead.median >= 6,
  ],
  [
    'full write (distinct args) ÷ full read',
    '3.5–5×',
    `${fmt(writeVsRead.median)}× (${spread(writeVsRead)})`,
    '≤ 3×',
    writeVsRead.median <= 3,
  ],
  [
    `createAgent turn, one tool call, full stack (one more tool turn: runs of ${LONG_TURNS} and 1 tool turns, the difference ÷ ${LONG_TURNS - 1})`,
    '29 µs',
    `${formatNs(turnNs)} (${formatNs(turnNsRange[0] as number)}–${formatNs(turnNsRange[1] as number)})`,
    '≤ 8 µs',
    turnNs <= 8_000,
  ],
  [
    'createAgent run: the tool turn and the answer (two model calls, one tool call, the run set up and finished)',
    'not measured',
    `${formatNs(agentNs)} (${formatNs(agentNsRange[0] as number)}–${formatNs(agentNsRange[1] as number)}; ${fmt(agentVsKoa.median)}× koa-compose 7)`,
    '≤ 8 µs',
    agentNs <= 8_000,
  ],
  ['10,000 concurrent runs each in one tool call, heap', '157 MB', `${fmt(concurrent.heapMB, 1)} MB`, '≤ 60 MB', concurrent.heapMB <= 60],
  ...(['read', 'write'] as const).map((kind): [string, string, string, string, boolean] => [
    `heap after ${heapCalls.toLocaleString('en')} distinct calls / sustained last÷first second, ${kind}s`,
    kind === 'read' ? '−0.2 MB / 1.2' : 'not measured',
    `${fmt(heap[kind].retainedMB, 1)} MB / ${fmt(throughput[kind].relativeFirstToLast)} (raw ${fmt(throughput[kind].firstToLast)})`,
    '< 20 MB / ≥ 0.9',
    heap[kind].retainedMB < 20 && throughput[kind].relativeFirstToLast >= 0.9,
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
  targetRounds,
  targetNsPerRound: Object.fromEntries(Object.entries(pair.perRound).map(([name, values]) => [name, values.map(Math.round)])),
  p50ns: Object.fromEntries([...measured, ...classifier, ...sanitizer].map((r) => [r.name, Math.round(r.p50ns)])),
  ratios,
  heapRetainedMB: { read: heap.read.retainedMB, write: heap.write.retainedMB },
  heapCalls,
  throughputPerSecond: { read: throughput.read.perSecond, write: throughput.write.perSecond },
  throughputLastOverFirst: { read: throughput.read.firstToLast, write: throughput.write.firstToLast },
  throughputRelativeToKoa7: {
    read: throughput.read.relative.map((r) => Number(r.toFixed(3))),
    write: throughput.write.relative.map((r) => Number(r.toFixed(3))),
  },
  throughputRelativeLastOverFirst: { read: throughput.read.relativeFirstToLast, write: throughput.write.relativeFirstToLast },
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
round, the order rotated, after one unmeasured warm-up round); each figure is the median round's mitata median, with
the fastest and slowest round beside it.

The targets' first five rows were measured again on their own: the six rows involved (koa-compose 7, read, write,
cockatiel, an agent run of one tool turn, an agent run of ${LONG_TURNS}), ${targetRounds} short rounds back to back after a warm-up
round, the order rotated. Each ratio is the median of the ${targetRounds} ratios taken within a round, with the smallest and
largest in brackets. A turn is the difference between the two agent runs of one round, ÷ ${LONG_TURNS - 1}; the whole run of one
tool turn is its median round. Both are given with the fastest and slowest round.

## How to read these

- **Read the ratios, not the times.** The machine is shared and its load moves every figure together; a ratio taken
  against a peer in the same round moves with the code. Each row's fastest and slowest round show how far the load
  moved it.
- **The floors.** koa-compose 7 async no-ops is the onion with no work in it; cockatiel's \`wrap(retry, breaker,
  timeout)\` and opossum are the peers, measured in the same process. A layer alone is measured over the bare
  dispatcher, so its row is what the layer adds.
- **Steady state.** Rows run in interleaved rounds after an unmeasured warm-up round, with no forced collection
  between them: a collection forced before each row charged the row after it for the heap the one before left. The
  targets' ratios are taken within a round, in a short block of their own, because a ratio of two medians from
  different moments of a loaded machine moves with the load.
- **What a difference is worth.** A tool call takes milliseconds and a model call seconds: a microsecond per call
  matters to the simulator and to a process that serves many runs, not to one agent. A target marks a figure a user
  would notice; "before" is the figure when it was set, and a missed target is a figure to watch, not a failed run.
- **The agent runs** below count outcomes in virtual time (completed, duplicated writes, hangs), not CPU.
- **Where they come from.** \`pnpm bench -- --docs=docs/benchmarks.md\` writes this page from one run;
  \`pnpm bench:agents --docs\` writes the agent runs between their markers. The agent section's prose is written
  by hand and kept by both scripts; the rest is \`bench/src/run.ts\`'s template: change it there, not here.

## Targets

| measured | before | this run | target | |
|---|---:|---:|---:|---|
${targets.map(([what, before, now, target, met]) => `| ${what} | ${before} | ${now} | ${target} | ${met ? 'met' : '**missed**'} |`).join('\n')}

## Full default stack against the peers (scenarios 1, 2, 3, 5)

${table([...peerRows, ...fullRows], koa, KOA)}

## Each layer alone (scenario 4)

${table([...headline, ...layerRows], koa, KOA)}

## Bulkhead, fallback and hedging alone; half-open sampling, retry hooks and convergence; context editing; redact and coalesce (scenario 9)

${table([...headline, ...resilienceRows], koa, KOA)}

contextEditing() per model call when nothing is trimmed, over the bare model onion ((row − bare row) ÷ ${CONTEXT_TURNS + 1} model calls): **${formatNs((p50(CONTEXT_BUDGET) - p50(CONTEXT_BARE)) / (CONTEXT_TURNS + 1))}** with a budget (the request estimated), **${formatNs((p50(CONTEXT_REACTIVE) - p50(CONTEXT_BARE)) / (CONTEXT_TURNS + 1))}** without one.

The default model stack per model call, over \`@shallot/core\`'s own path ((row − row) ÷ ${MODEL_TURNS + 1} model calls): **${formatNs((p50(MODEL_DEFAULT) - p50(MODEL_CORE)) / (MODEL_TURNS + 1))}** (target ≤ 1 µs).

redact() on a 2 MB result against a 1 MB one: **${fmt(p50(REDACT_2MB) / p50(REDACT_1MB))}×** the time (linear work is 2×; target < 2.5×).

## Endurance (scenarios 6, 7, 12, 13)

- Heap retained after ${heapCalls.toLocaleString('en')} calls with distinct arguments: reads **${fmt(heap.read.retainedMB)} MB**, writes **${fmt(heap.write.retainedMB)} MB** (target < 20 MB).
- Calls per CPU second, second by second: reads ${throughput.read.perSecond.join(', ')} (last / first ${fmt(throughput.read.firstToLast)}); writes ${throughput.write.perSecond.join(', ')} (last / first ${fmt(throughput.write.firstToLast)}). After one uncounted second, each second alternates slices of 1,024 calls with 1,024 calls through koa-compose 7; the stack's rate ÷ koa-compose's in the same second, last / first: reads **${fmt(throughput.read.relativeFirstToLast)}**, writes **${fmt(throughput.write.relativeFirstToLast)}** (target ≥ 0.9; the raw figure moves with the machine, this one with the code).
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
  // The agent bench (bench/agents, `pnpm bench:agents --docs`) owns its own section of the page: keep it.
  const previous = existsSync(docsPath) ? readFileSync(docsPath, 'utf8') : ''
  const agents = previous.match(/\n## Agent runs under faults[\s\S]*?<!-- bench-agents:end -->\n/)?.[0] ?? ''
  const raw = doc.lastIndexOf('\nRaw figures:')
  const page = agents === '' || raw < 0 ? doc : `${doc.slice(0, raw)}${agents}${doc.slice(raw)}`
  writeFileSync(docsPath, page)
  console.log(`wrote ${docsPath}`)
}
