import {
  type Agent,
  type AgentOptions,
  memoryCheckpoints,
  ParkedError,
  type ParkingOutcome,
  ResumeError,
  type RunSnapshot,
} from '@shallot/agent'
import { aiSdkModel } from '@shallot/ai-sdk'
import { type ApprovalAnswer, type ModelAdapter, type ModelRequest, type StackEvent, systemClock } from '@shallot/core'
import { createAgent, defaultMiddleware, defaultModelMiddleware } from 'shallot'
import type { CliIO } from '../cli-io.js'
import { color } from '../demo/paint.js'
import { printOutcome } from '../demo/summary.js'
import { timelinePrinter } from '../demo/timeline.js'
import { recordRun } from '../report/record-run.js'
import { UsageError } from '../usage.js'
import { askApprovals, MAX_ANSWER_CHARS } from './approval-prompt.js'
import { withCliNextSteps } from './cli-next-steps.js'
import { configOf, inheritOf, openStores, parkedRunOf, serverSpecs, stackOfConfig } from './command-setup.js'
import { commandWord } from './command-word.js'
import { leaveRun, pendingOf, resumeLine } from './leave-run.js'
import { lineReader } from './line-reader.js'
import { type McpServers, startMcpServers } from './mcp-servers.js'
import { resolveModel } from './model-spec.js'
import { EXIT_PARKED, parkedLines, parkedWhy, parkingModelStack } from './park.js'
import { withNote } from './resume-note.js'
import { type RunArgs, readRunArgs } from './run-args.js'
import { type WaitLines, waitLines } from './waits.js'

export { MAX_TASK_CHARS } from './run-args.js'

/**
 * `shallot run "<task>"` and `shallot resume <runId>`: a real agent (`createAgent`) over a provider
 * model (`aiSdkModel`), the tools of MCP servers, the config's stack or the default one, checkpoints
 * and idempotency records in SQLite. Prints the timeline as the run goes and the report at the end.
 * Resolves to 0 completed, 1 stopped, 75 parked; bad usage (a missing key, an unknown provider, a server that
 * does not start) is a `UsageError` before any model call.
 */
export async function runAgentCommand(
  mode: 'run' | 'resume',
  args: readonly string[],
  io: CliIO,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const run = readRunArgs(mode, args, io.clock)
  const { values, runId } = run
  const config = await configOf(values.config)
  const modelSpec = values.model ?? config?.document.model
  if (modelSpec === undefined) throw new UsageError(`--model is required (or model: in the config file): ${run.example}`)
  const resolved = resolveModel(modelSpec, env)
  const specs = serverSpecs(config, values.mcp ?? [], inheritOf(values['mcp-env']))

  const stores = values.checkpoints === undefined ? undefined : openStores(values.checkpoints)
  let servers: McpServers | undefined
  let stopWaits = () => {}
  const stop = new AbortController()
  const onSigint = () => stop.abort(new Error('interrupted (SIGINT)'))
  try {
    const parkedAt = stores === undefined ? undefined : parkedRunOf(mode, runId, stores, values.checkpoints as string)
    // Checked now, saved once everything has started: a server that fails leaves the checkpoint as it was.
    const noted =
      stores === undefined || run.note === undefined ? undefined : withNote(stores.checkpoints.load(runId) as RunSnapshot, run.note)
    servers = await startMcpServers(specs)
    const tools = servers.tools
    const { stack, modelLayers } = config === undefined ? {} : stackOfConfig(config, tools, stores)
    const live = liveAgent({ run, io, env, resolved, tools, stack, modelLayers, stores })
    stopWaits = live.waits.close
    const names = tools.map((t) => t.name)
    io.out(
      color.dim(
        `${mode === 'run' ? 'run' : 'resuming run'} ${runId} · ${resolved.spec} · ${names.length} tool${names.length === 1 ? '' : 's'}${names.length > 0 ? ` (${names.slice(0, 8).join(', ')}${names.length > 8 ? ', …' : ''})` : ''} · ${config === undefined ? 'default stack' : `stack of ${values.config}`}${values.checkpoints === undefined ? '' : ` · checkpoints ${values.checkpoints}`}`,
      ),
    )
    if (noted !== undefined) stores?.checkpoints.save(noted)
    process.once('SIGINT', onSigint)
    return await driveRun({ mode, run, io, env, resolved, modelSpec, parkedAt, signal: stop.signal, live })
  } finally {
    stopWaits()
    process.removeListener('SIGINT', onSigint)
    await servers?.close()
    stores?.checkpoints.close()
    stores?.idempotency.close()
  }
}

/** The agent of a run, with what prints it as it goes: the wait lines, the timeline, the recorder. */
interface LiveAgent {
  readonly agent: Agent<ParkingOutcome>
  readonly waits: WaitLines
  readonly printer: ReturnType<typeof timelinePrinter>
  readonly events: StackEvent[]
  readonly requests: Array<Omit<ModelRequest, 'signal'> | undefined>
  readonly recorder: ReturnType<typeof recordRun>
}

function liveAgent(o: {
  run: RunArgs
  io: CliIO
  env: NodeJS.ProcessEnv
  resolved: ReturnType<typeof resolveModel>
  tools: McpServers['tools']
  stack: AgentOptions['stack']
  modelLayers: AgentOptions['modelMiddleware']
  stores: ReturnType<typeof openStores> | undefined
}): LiveAgent {
  const { run, io, resolved, tools, stack, modelLayers, stores } = o
  const events: StackEvent[] = []
  const requests: Array<Omit<ModelRequest, 'signal'> | undefined> = []
  // Each wait (a retry, a long tool call) is shown as it starts; the timeline's lines go round its live line.
  const waits = waitLines({
    out: io.out,
    stream: io.status,
    clock: io.clock ?? systemClock,
    env: o.env,
    model: resolved.spec,
    secrets: [...resolved.secrets],
  })
  const printer = timelinePrinter(waits.out)
  // A provider's Retry-After is handed on as it came (up to a day): the model retry and --park-after decide on it.
  const errors = { secrets: [...resolved.secrets], maxRetryAfterMs: 86_400_000 }
  const provider = aiSdkModel(resolved.model, { stream: run.values.stream === true, errors })
  // Each model call carries the transcript so far, so the previous turn (with its results) is printed as it starts.
  const live: ModelAdapter = {
    // The report, the events and the prices name the model by these: without them it is "model".
    ...(provider.name === undefined ? {} : { name: provider.name }),
    ...(provider.provider === undefined ? {} : { provider: provider.provider }),
    generate(request) {
      printer.upTo(request.messages, events, requests)
      requests[request.messages.filter((m) => m.role === 'assistant').length] = request
      return provider.generate(request)
    },
  }
  const recorder = recordRun()
  const { park } = run
  // An agent created with park answers parked outcomes too; one without never does.
  const agent: Agent<ParkingOutcome> = createAgent({
    model: recorder.model(live),
    ...(stack === undefined
      ? { tools, middleware: defaultMiddleware(stores === undefined ? {} : { idempotency: { store: stores.idempotency } }) }
      : { stack }),
    limits: run.limits,
    // Without a file, a run asked about at the terminal is still resumed in this process.
    checkpoints: stores === undefined ? memoryCheckpoints() : stores.checkpoints,
    onEvent: waits.agentEvent,
    ...(io.clock === undefined ? {} : { clock: io.clock }),
    ...(park === undefined ? {} : { park }),
    // A run asks its model through the default model stack unless the config file lists its own layers.
    modelMiddleware: modelLayers ?? defaultModelMiddleware(parkingModelStack(park)),
  })
  agent.stack.on((event) => {
    events.push(event)
    waits.stackEvent(event)
  })
  recorder.listen(agent.stack)
  return { agent, waits, printer, events, requests, recorder }
}

/** What {@link driveRun} needs: the checked arguments, the model, the live agent and the run's signal. */
interface Driving {
  readonly mode: 'run' | 'resume'
  readonly run: RunArgs
  readonly io: CliIO
  readonly env: NodeJS.ProcessEnv
  readonly resolved: ReturnType<typeof resolveModel>
  readonly modelSpec: string
  readonly parkedAt: { wakeAt: number; why: string } | undefined
  readonly signal: AbortSignal
  readonly live: LiveAgent
}

/**
 * Runs (or resumes) the agent, prints each outcome, and at a terminal asks a person about the calls
 * waiting for approval and resumes with the answers; then leaves the run's files behind.
 */
async function driveRun(d: Driving): Promise<number> {
  const { run, io, live, resolved, signal } = d
  const { agent, waits, printer, events, requests } = live
  const { runId, values, park } = run
  const resumeWith = async (approvals: Record<string, ApprovalAnswer> | undefined) => {
    try {
      return await agent.resume(runId, approvals === undefined ? { signal } : { signal, approvals })
    } catch (err) {
      // An answer to a call that is not pending, a malformed one, a checkpoint that cannot be replayed, a run busy elsewhere.
      if (!ParkedError.is(err) && (err instanceof TypeError || ResumeError.is(err))) throw new UsageError(err.message)
      throw err
    }
  }
  const wallNow = park?.wallNow ?? Date.now
  const { parkedAt } = d
  const restMs = parkedAt === undefined ? 0 : parkedAt.wakeAt - wallNow()
  // Resumed a little early, the agent waits out the rest: shown as a wait, like any other.
  if (parkedAt !== undefined && park !== undefined && restMs > 0 && restMs < park.afterMs) waits.waking(parkedAt.why, restMs)
  let outcome: ParkingOutcome
  try {
    outcome = d.mode === 'run' ? await agent.run({ runId, input: run.given, signal }) : await resumeWith(run.flagged)
  } catch (err) {
    // Resumed before its time without --park-after: nothing ran; the same command works once the time has come.
    if (!ParkedError.is(err)) throw err
    io.out(
      `run ${runId} is parked until ${new Date(err.wakeAt).toISOString()} (${Math.ceil((err.wakeAt - wallNow()) / 1000)} s from now)${parkedAt === undefined ? '' : `: ${parkedAt.why}`}; nothing ran. Run this command again then, or add --park-after <ms> to wait a shorter rest here`,
    )
    return EXIT_PARKED
  }
  const resumeOf = (o: ParkingOutcome) =>
    values.checkpoints === undefined ? undefined : resumeLine(runId, values, d.modelSpec, o, commandWord(d.env))
  // The report as the command line tells it: `shallot resume …`, and a provider's refusal naming what to fix.
  const told = (o: ParkingOutcome): ParkingOutcome => (o.status === 'parked' ? o : withCliNextSteps(o, resumeOf(o), resolved))
  // At a terminal a person answers now, and the run goes on in this process; elsewhere it stops with the command.
  const input = io.inputIsTerminal === true ? io.input : undefined
  // Opened at the first question, not before: the terminal is not read while the run goes.
  let reader: ReturnType<typeof lineReader> | undefined
  try {
    for (;;) {
      waits.close()
      printer.upTo(outcome.transcript, events, requests)
      printer.inFlight(outcome, events)
      if (outcome.status === 'parked') waits.parked(parkedWhy(outcome), outcome.wakeAt - wallNow())
      io.out('')
      if (outcome.status === 'parked') for (const line of parkedLines(outcome, resumeOf(outcome) ?? '', wallNow())) io.out(line)
      else printOutcome(io.out, withCliNextSteps(outcome, resumeOf(outcome), resolved))
      const pending = pendingOf(outcome)
      if (input === undefined || pending.length === 0 || signal.aborted) break
      reader ??= lineReader(input, MAX_ANSWER_CHARS)
      outcome = await resumeWith(await askApprovals(pending, reader, io.out))
    }
  } finally {
    reader?.close()
  }
  return await leaveRun(outcome, { told: told(outcome), resume: resumeOf(outcome), values, resolved, recorder: live.recorder, io })
}
