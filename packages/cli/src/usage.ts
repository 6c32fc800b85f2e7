import { escapeControls } from '@shallot/core/kit'

/**
 * Thrown for bad flags, unknown commands and missing files: one line, then the usage, exit code 2.
 * What the line quotes (a flag, a run id, a file's key) may hold anything, so each line's control
 * characters are shown as escapes: a message never adds a line nor drives the terminal. Several
 * problems (a config's) are given as one line each.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError'

  constructor(lines: string | readonly string[]) {
    super((typeof lines === 'string' ? [lines] : lines).map((line) => escapeControls(line, { oneLine: true })).join('\n'))
  }
}

export const USAGE = `usage: shallot <command> [options]

commands:
  run --model PROVIDER:MODEL "TASK"   a real agent: the model, MCP servers' tools, shallot's stack
      --model openai:ID           also anthropic:ID, openai-responses:ID (keys: OPENAI_API_KEY, ANTHROPIC_API_KEY;
                                  servers: OPENAI_BASE_URL, ANTHROPIC_BASE_URL)
      --mcp "COMMAND"             an MCP server over stdio (repeatable)
      --mcp-env all|minimal|VAR,…  the environment MCP servers get: all of yours (default), the MCP SDK's six, or those plus VARs
      --config FILE               the stack (and model:, mcpServers:) of a config file; default: the default stack
      --checkpoints FILE.db       checkpoints and idempotency records in SQLite, so the run can be resumed;
                                  a stop also writes RUN_ID.handoff.md beside it for the person who picks it up
      --park-after MS             a tool wait of MS or more (an open circuit, a long Retry-After) parks the run in
                                  its checkpoint: exit 75 and the resume command to run at the time it names
      --report FILE.md            write the report; --html FILE.html the timeline; --record FILE.json the record
      --max-turns N --max-steps N --run-id ID --stream
  resume RUN_ID --checkpoints FILE.db [--model … --config … --mcp …]
                                  continue a stopped or crashed run; completed calls are not repeated
      --approve CALL_ID           answer a call waiting for approval (repeatable); --deny CALL_ID[=REASON],
      --edit 'CALL_ID=JSON'       or run it with edited arguments. At a terminal, run and resume ask instead
  demo [--real-time]              the story: every layer at work in one scripted agent run
      --record FILE.json          also write the run record (turns, calls, layer events, report)
      --html FILE.html            also write the run as a self-contained HTML timeline
  report FILE.json -o FILE.html   render a run record as a self-contained HTML timeline
  sim [options]                   many simulated runs with injected faults, on virtual time
      --steps 10,50,100,200       tool calls per run (comma list)
      --runs 10000                runs per cell
      --fault-rate 0.01           probability that one tool attempt fails
      --faults timeout,429,5xx,reset
      --latency 0                 virtual ms per tool attempt
      --effect read|write|idempotent  the simulated tool's effect
      --seed 1
      --config FILE               simulate the stack of a config file instead of the default
      --compare A B               two config files side by side
      --plot FILE.svg             write a chart of success rate by steps
  sim herd [--clients 100]        N clients contending for one resource, with each backoff
  check FILE                      validate a config file; exit code 1 on error
  --version                       print the version
`
