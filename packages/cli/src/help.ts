/** The commands that have their own `--help`. */
export type HelpTopic = 'run' | 'resume' | 'demo' | 'report' | 'sim' | 'check'

/** What each command's exit codes mean; the README's table says the same. */
const EXITS: Readonly<Record<HelpTopic, readonly string[]>> = {
  run: [
    '0   the run completed',
    '1   the run stopped: the report says why (a budget, a loop, a model that failed or was never reached, a call',
    '    waiting for approval, Ctrl-C) and how to resume it',
    '2   bad usage, before any model call: a flag, a missing key, an unknown provider, a server that did not start,',
    '    a run id the checkpoints file already holds, a file that cannot be written',
    '75  parked (--park-after): run the printed shallot resume … at or after the time it names',
  ],
  resume: [
    '0   the run completed',
    '1   the run stopped again: the report says why and how to resume it',
    '2   bad usage, before any model call: a flag, a run id the checkpoints file does not hold, an answer to no',
    '    pending call, a --note for a run waiting for approval or parked',
    '75  still parked: run it again at or after the time it names',
  ],
  demo: ['0   the story ran (its run stops by design: that stop is the last scene)', '2   bad usage: a flag, a file it cannot write'],
  report: ['0   the page is written', '2   bad usage: a record it cannot read, a file it cannot write'],
  sim: ['0   the tables are printed', '1   a config file has problems (each with its line)', '2   bad usage: a flag, a missing file'],
  check: [
    '0   the config is valid',
    '1   the config has problems (each printed as file:line: path: message)',
    '2   bad usage: no file, or more than one',
  ],
}

/** A command as help shows it: how it is called, what it does, and its options (one per line, aligned). */
interface Command {
  readonly usage: string
  readonly about: string
  readonly options: readonly string[]
}

/** Each command, as `shallot <command> --help` prints it and `shallot --help` lists it. */
const COMMANDS: Readonly<Record<HelpTopic, Command>> = {
  run: {
    usage: 'run --model PROVIDER:MODEL "TASK"',
    about: "a real agent: the model, MCP servers' tools, shallot's stack",
    options: [
      '--model openai:ID           also anthropic:ID, openai-responses:ID (keys: OPENAI_API_KEY, ANTHROPIC_API_KEY;',
      '                            servers: OPENAI_BASE_URL, ANTHROPIC_BASE_URL)',
      '--mcp "COMMAND"             an MCP server over stdio (repeatable)',
      "--mcp-env all|minimal|VAR,…  the environment MCP servers get: all of yours (default), the MCP SDK's six, or those plus VARs",
      '--config FILE               the stack (and model:, mcpServers:) of a config file; default: the default stack',
      '--checkpoints FILE.db       checkpoints and idempotency records in SQLite, so the run can be resumed;',
      '                            a stop also writes RUN_ID.handoff.md beside it for the person who picks it up',
      '--park-after MS             a wait of MS or more (an open circuit, a long Retry-After of a tool or the model)',
      '                            parks the run in its checkpoint: exit 75 and the resume command to run then',
      '--report FILE.md            write the report; --html FILE.html the timeline; --record FILE.json the record',
      '--max-turns N --max-steps N --run-id ID --stream',
    ],
  },
  resume: {
    usage: 'resume RUN_ID --checkpoints FILE.db [--model … --config … --mcp …]',
    about: 'continue a stopped or crashed run; completed calls are not repeated',
    options: [
      '--note "TEXT"               tell the model what a person changed or wants (it reads it before its next turn),',
      '                            and forget the repeats stuck-loop counted: resume a loop_detected stop with it',
      '--approve CALL_ID           answer a call waiting for approval (repeatable); --deny CALL_ID[=REASON],',
      "--edit 'CALL_ID=JSON'       or run it with edited arguments. At a terminal, run and resume ask instead",
      '--max-turns N --max-steps N a larger budget for a run that spent its own',
    ],
  },
  demo: {
    usage: 'demo [--real-time]',
    about: 'the story: every layer at work in one scripted agent run',
    options: [
      '--record FILE.json          also write the run record (turns, calls, layer events, report)',
      '--html FILE.html            also write the run as a self-contained HTML timeline',
    ],
  },
  report: { usage: 'report FILE.json -o FILE.html', about: 'render a run record as a self-contained HTML timeline', options: [] },
  sim: {
    usage: 'sim [options]',
    about: 'many simulated runs with injected faults, on virtual time',
    options: [
      '--steps 10,50,100,200       tool calls per run (comma list)',
      '--runs 10000                runs per cell',
      '--fault-rate 0.01           probability that one tool attempt fails',
      '--faults timeout,429,5xx,reset',
      '--latency 0                 virtual ms per tool attempt',
      "--effect read|write|idempotent  the simulated tool's effect",
      '--seed 1',
      '--config FILE               simulate the stack of a config file instead of the default',
      '--compare A B               two config files side by side',
      '--plot FILE.svg             write a chart of success rate by steps',
      'herd [--clients 100]        (sim herd) N clients contending for one resource, with each backoff',
      'outage [--runs 500]         (sim outage) model calls through a provider outage: 3 attempts vs a 2-minute budget',
    ],
  },
  check: { usage: 'check FILE', about: 'validate a config file (JSON or YAML); exit code 1 on error', options: [] },
}

const indent = (lines: readonly string[], by: string) => lines.map((line) => `${by}${line}`).join('\n')

/** A command's lines in the list of `shallot --help`: its usage and what it does, then its options. */
function listed({ usage, about, options }: Command): string {
  const head = usage.length < 32 ? `  ${usage.padEnd(32)}${about}` : `  ${usage}\n${' '.repeat(34)}${about}`
  return options.length === 0 ? head : `${head}\n${indent(options, '      ')}`
}

/** `shallot --help`: every command and its options, then what the exit codes mean. */
export const USAGE = `usage: shallot <command> [options]

commands:
${Object.values(COMMANDS).map(listed).join('\n')}
  --version                       print the version
  <command> --help                that command's usage, options and exit codes

exit codes:
  0   done (run, resume: the run completed; check: the config is valid)
  1   run, resume: the run stopped (the report says why); check, sim: the config has problems; any command:
      a failure it could not recover from (shallot: <message>)
  2   bad usage: an unknown command or flag, a bad value, a missing file (nothing ran)
  75  run, resume with --park-after: the run parked; resume it at the time it names
`

/**
 * `shallot <command> --help` (or `-h`, or `shallot help <command>`): the command's usage, its options
 * and what its exit codes mean.
 *
 * @example
 * io.out(helpOf('check')) // usage: shallot check FILE …
 */
export function helpOf(topic: HelpTopic): string {
  const { usage, about, options } = COMMANDS[topic]
  return `usage: shallot ${usage}

${about}
${options.length === 0 ? '' : `\noptions:\n${indent(options, '  ')}\n`}
exit codes:
${indent(EXITS[topic], '  ')}
`
}

/** Whether `name` is a command with its own help. */
export function isHelpTopic(name: string | undefined): name is HelpTopic {
  return name !== undefined && Object.hasOwn(COMMANDS, name)
}
