import { existsSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { AgentOptions } from '@shallot/agent'
import { ConfigError, createStackFromConfig, loadConfig, type ShallotConfig } from '@shallot/config'
import { ToolError } from '@shallot/core'
import type { ServerEnvInherit } from '@shallot/mcp'
import { policyDefinition } from '@shallot/policy'
import { type SqliteCheckpoints, type SqliteStore, sqliteCheckpoints, sqliteStore } from '@shallot/store-sqlite'
import { UsageError } from '../usage.js'
import type { McpServerSpec } from './mcp-servers.js'
import { waiterOf } from './park.js'
import { splitCommand } from './split-command.js'

export async function configOf(file: string | undefined): Promise<ShallotConfig | undefined> {
  if (file === undefined) return undefined
  if (!existsSync(file)) throw new UsageError(`no such file: ${file}`)
  try {
    // The policy layer is named like a built-in: its rules and approvals are what `run` asks about.
    return await loadConfig(file, { middleware: [policyDefinition] })
  } catch (err) {
    if (ConfigError.is(err)) throw new UsageError(err.message.split('\n'))
    throw err
  }
}

/** `--mcp-env all|minimal|NAME,NAME`: which of this process's variables the MCP servers get (default all). */
export function inheritOf(value: string | undefined): ServerEnvInherit {
  if (value === undefined || value === 'all') return 'all'
  if (value === 'minimal') return 'minimal'
  const names = value.split(',').map((n) => n.trim())
  const bad = names.find((n) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(n))
  if (bad !== undefined)
    throw new UsageError(
      `--mcp-env takes all (the default), minimal (HOME, PATH, … only) or a comma list of variables to add to minimal, e.g. --mcp-env HTTPS_PROXY,NODE_EXTRA_CA_CERTS; "${bad.slice(0, 40)}" is none of them`,
    )
  return names
}

/** The config's `mcpServers:` (paths against the file's folder), then every `--mcp`. */
export function serverSpecs(config: ShallotConfig | undefined, flags: readonly string[], inherit: ServerEnvInherit): McpServerSpec[] {
  const specs: McpServerSpec[] = []
  for (const [name, server] of Object.entries(config?.document.mcpServers ?? {})) {
    const where = `mcpServers.${name} in ${config?.file}`
    if (typeof server === 'string') {
      const [command, ...args] = splitCommand(server, where)
      specs.push({ name, command: command as string, args, cwd: config?.dir as string, inherit })
    } else {
      specs.push({
        name,
        command: server.command,
        args: server.args,
        cwd: resolve(config?.dir ?? '.', server.cwd ?? '.'),
        inherit,
        ...(server.env === undefined ? {} : { env: server.env }),
      })
    }
  }
  flags.forEach((line, i) => {
    const [command, ...args] = splitCommand(line, `--mcp "${line.slice(0, 60)}"`)
    specs.push({ name: flags.length === 1 && specs.length === 0 ? 'mcp' : `mcp-${i + 1}`, command: command as string, args, inherit })
  })
  return specs
}

/** The SQLite file of checkpoints and idempotency records; its folder must exist (nothing is created behind the user's back). */
export function openStores(file: string): { checkpoints: SqliteCheckpoints; idempotency: SqliteStore } {
  const folder = dirname(resolve(file))
  if (!existsSync(folder) || !statSync(folder).isDirectory())
    throw new UsageError(`--checkpoints ${file}: the folder ${folder} does not exist`)
  if (existsSync(file) && statSync(file).isDirectory())
    throw new UsageError(`--checkpoints ${file} is a folder; name a file, e.g. ${file}/run.db`)
  try {
    const checkpoints = sqliteCheckpoints({ path: file })
    try {
      return { checkpoints, idempotency: sqliteStore({ path: file }) }
    } catch (err) {
      checkpoints.close()
      throw err
    }
  } catch (err) {
    if (err instanceof UsageError) throw err
    throw new UsageError(`--checkpoints ${file} cannot be opened as a SQLite database: ${err instanceof Error ? err.message : String(err)}`)
  }
}

/** The config file's stack, and its modelMiddleware: layers when it has them (without, the run lists the default model stack). */
export function stackOfConfig(
  config: NonNullable<Awaited<ReturnType<typeof configOf>>>,
  tools: Parameters<typeof createStackFromConfig>[1]['tools'],
  stores: ReturnType<typeof openStores> | undefined,
): { stack: AgentOptions['stack']; modelLayers: AgentOptions['modelMiddleware'] } {
  try {
    const built = createStackFromConfig(config, {
      tools,
      ...(stores === undefined ? {} : { stores: { idempotency: stores.idempotency } }),
    })
    return { stack: built, modelLayers: config.document.modelMiddleware === undefined ? undefined : built.modelMiddleware }
  } catch (err) {
    if (ConfigError.is(err)) throw new UsageError(err.message.split('\n'))
    throw err
  }
}

/**
 * Reads the run's checkpoint before anything starts: `resume` needs one, `run` must not find one, and
 * one that cannot be read back is never resumed nor overwritten (a person must look first). Answers
 * when a parked run being resumed may go on, and what it waits for.
 */
export function parkedRunOf(
  mode: 'run' | 'resume',
  runId: string,
  stores: ReturnType<typeof openStores>,
  file: string,
): { wakeAt: number; why: string } | undefined {
  let snapshot: ReturnType<SqliteCheckpoints['load']>
  try {
    snapshot = stores.checkpoints.load(runId)
  } catch (err) {
    if (ToolError.is(err)) throw new UsageError(`${err.message} (${file})`)
    throw err
  }
  if (mode === 'resume' && snapshot === undefined) {
    const known = stores.checkpoints.runIds().slice(0, 5)
    throw new UsageError(`no run "${runId}" in ${file}${known.length === 0 ? ' (it holds no runs)' : `; it holds ${known.join(', ')}`}`)
  }
  if (mode === 'run' && snapshot !== undefined)
    throw new UsageError(
      `${file} already holds run "${runId}" (${snapshot.status}); resume it with shallot resume ${runId}, or pick another --run-id`,
    )
  if (mode === 'resume' && snapshot?.status === 'parked' && typeof snapshot.parked?.wakeAt === 'number') {
    const { wakeAt, reason } = snapshot.parked
    return { wakeAt, why: `${waiterOf(reason, false)} answered ${reason.code}` }
  }
  return undefined
}
