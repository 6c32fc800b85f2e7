import { readFileSync } from 'node:fs'
import { isatty } from 'node:tty'
import { parseArgs } from 'node:util'
import { closest, escapeControls } from '@shallot/core/kit'
import { runCheck } from './check.js'
import type { CliIO } from './cli-io.js'
import { runDemo } from './demo/run-demo.js'
import { helpOf, isHelpTopic, USAGE } from './help.js'
import { runReport, writeRunFiles } from './report/command.js'
import { RUN_FLAGS } from './run/flags.js'
import { defaultStacks, type NamedStack, NO_RETRY, parseSimFlags, runHerd, runOutage, runSim } from './sim/command.js'
import { configStack } from './sim/config-stack.js'
import { progressLines } from './sim/progress.js'
import { terminalIO } from './terminal-text.js'
import { UsageError } from './usage.js'

export type { CliIO } from './cli-io.js'

const COMMANDS = ['run', 'resume', 'demo', 'sim', 'check', 'report', 'help'] as const

/** The version in this package's manifest (one folder above both `src/` and `dist/`). */
function version(): string {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  return manifest.version
}

/** `Unknown option '--rusn'` from parseArgs, with the nearest flag the command accepts. */
function withFlagGuess(message: string, flags: readonly string[]): string {
  const typed = /Unknown option '(-{1,2}[^']+)'/.exec(message)?.[1]
  if (typed === undefined || flags.length === 0) return message
  const guess = closest(typed.replace(/^-+/, ''), flags)
  // parseArgs' note about positionals that start with '-' is noise next to the flag the user meant.
  return guess === undefined ? message : `Unknown option '${typed}'; did you mean '--${guess}'?`
}

const DEMO_FLAGS = { 'real-time': { type: 'boolean' }, record: { type: 'string' }, html: { type: 'string' } } as const

const SIM_FLAGS = {
  steps: { type: 'string' },
  runs: { type: 'string' },
  'fault-rate': { type: 'string' },
  faults: { type: 'string' },
  latency: { type: 'string' },
  effect: { type: 'string' },
  seed: { type: 'string' },
  config: { type: 'string' },
  compare: { type: 'boolean' },
  plot: { type: 'string' },
  clients: { type: 'string' },
} as const

/**
 * Runs the `shallot` command line and resolves to the exit code: 0 ok, 1 a failed check or a stopped run, 2 bad usage,
 * 75 a parked run (the table is in `shallot --help` and the README).
 * Every line printed shows control characters as escape text (`\x1b`): a tool, the model or a file cannot drive the terminal.
 *
 * @example
 * process.exitCode = await main(process.argv.slice(2))
 */
export async function main(
  argv: readonly string[],
  given: CliIO = {
    out: console.log,
    err: console.error,
    errIsTerminal: process.stderr.isTTY === true,
    // Read only when a run waits for approval at a terminal: an untouched stdin keeps nothing alive.
    get input() {
      return process.stdin
    },
    inputIsTerminal: isatty(0),
    status: process.stdout,
  },
): Promise<number> {
  const io = terminalIO(given)
  const [command, ...rest] = argv
  // `shallot check --help` and `shallot help check` alike: the command's usage, options and exit codes.
  if (isHelpTopic(command) && rest.some((arg) => arg === '--help' || arg === '-h')) {
    io.out(helpOf(command))
    return 0
  }
  let flags: readonly string[] = []
  try {
    switch (command) {
      case 'run':
      case 'resume': {
        flags = Object.keys(RUN_FLAGS)
        // Loaded only here: the provider SDKs, the MCP client and SQLite are not what demo, sim or check need.
        const { runAgentCommand } = await import('./run/command.js')
        return await runAgentCommand(command, rest, io)
      }
      case 'demo': {
        flags = Object.keys(DEMO_FLAGS)
        const { values } = parseArgs({ args: rest, options: DEMO_FLAGS, strict: true })
        const files = {
          ...(values.record !== undefined ? { record: values.record } : {}),
          ...(values.html !== undefined ? { html: values.html } : {}),
        }
        return await runDemo({ realTime: values['real-time'] === true, print: io.out, onRecord: (r) => writeRunFiles(r, files, io.out) })
      }
      case 'report': {
        return await runReport(rest, io.out)
      }
      case 'sim': {
        flags = Object.keys(SIM_FLAGS)
        const { values, positionals } = parseArgs({ args: rest, options: SIM_FLAGS, strict: true, allowPositionals: true })
        if (positionals[0] === 'herd') {
          await runHerd(values, io.out)
          return 0
        }
        if (positionals[0] === 'outage') {
          await runOutage(values, io.out)
          return 0
        }
        const simFlags = parseSimFlags(values)
        const stacks: NamedStack[] = []
        if (values.compare === true) {
          if (positionals.length !== 2) throw new UsageError('--compare takes two config files: shallot sim --compare a.yaml b.yaml')
          for (const file of positionals) stacks.push(await configStack(file, io.err))
        } else if (positionals.length > 0) {
          throw new UsageError(`unexpected argument "${positionals[0]}"`)
        } else if (values.config !== undefined) {
          stacks.push(NO_RETRY, await configStack(values.config, io.err))
        } else {
          stacks.push(...defaultStacks(simFlags.effect))
        }
        await runSim(simFlags, stacks, io.out, progressLines(io.err, io.errIsTerminal === true))
        return 0
      }
      case 'check': {
        if (rest.length !== 1 || rest[0]?.startsWith('-')) throw new UsageError('check takes one config file: shallot check shallot.yaml')
        return await runCheck(rest[0] as string, io)
      }
      case '--version':
      case '-v':
        io.out(version())
        return 0
      case 'help': {
        const [topic, ...extra] = rest
        if (topic === undefined) {
          io.out(USAGE)
          return 0
        }
        if (!isHelpTopic(topic) || extra.length > 0) {
          const guess = closest(topic, COMMANDS)
          throw new UsageError(`no help for "${topic}"${guess === undefined ? '' : `; did you mean '${guess}'?`}: shallot help <command>`)
        }
        io.out(helpOf(topic))
        return 0
      }
      case undefined:
      case '--help':
      case '-h':
        io.out(USAGE)
        return command === undefined ? 2 : 0
      default: {
        const guess = command.startsWith('-') ? undefined : closest(command, COMMANDS)
        throw new UsageError(`unknown command "${command}"${guess === undefined ? '' : `; did you mean '${guess}'?`}`)
      }
    }
  } catch (err) {
    if (err instanceof UsageError || (err instanceof TypeError && (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS'))) {
      // parseArgs quotes the flag as typed: one line, like a UsageError's.
      io.err(`shallot: ${err instanceof UsageError ? err.message : escapeControls(withFlagGuess(err.message, flags), { oneLine: true })}`)
      // A run's problem (a missing key, a server that did not start) is one line; the whole usage would bury it.
      if (command !== 'run' && command !== 'resume') io.err(USAGE)
      return 2
    }
    throw err
  }
}
