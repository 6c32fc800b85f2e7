import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { PassThrough } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { vi } from 'vitest'
import { main } from '../cli.js'

const packageDir = fileURLToPath(new URL('../..', import.meta.url))
/** The built command, as `npx shallot` runs it: vitest's global setup builds it before any test file starts (.ci/vitest-build.ts). */
export const binPath = join(packageDir, 'dist/bin.js')

/** The published filesystem server's entry point, as installed from the lockfile. */
export const filesystemServer = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/package.json')),
  'dist/index.js',
)

/** The published everything server (a long-running tool among others), as installed from the lockfile. */
export const everythingServer = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist/index.js',
)

/** The `--mcp` command line that starts the filesystem server on `root` with this very Node. */
export const filesystemMcp = (root: string) => `"${process.execPath}" "${filesystemServer}" "${root}"`

/** A fresh folder; `remove` deletes it. */
export async function tempDir(): Promise<{ root: string; remove: () => Promise<void> }> {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'shallot-run-')))
  return { root, remove: () => rm(root, { recursive: true, force: true }) }
}

/** The environment of a child: this one without any provider's key or URL, plus `env`. */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(OPENAI|ANTHROPIC)_/.test(k)))
  return { ...base, NO_COLOR: '1', ...env }
}

export interface Cli {
  readonly child: ChildProcess
  /** Everything written to stdout so far. */
  stdout(): string
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }>
}

/** Spawns `shallot <args>` as a child process. */
export function shallot(args: readonly string[], env: NodeJS.ProcessEnv, cwd?: string): Cli {
  const child = spawn(process.execPath, [binPath, ...args], { env, cwd: cwd ?? packageDir, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8')
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8')
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code, signal) => resolve({ code, signal, out, err }))
  })
  return { child, stdout: () => out, exited }
}

/** `main()` in this process, as `shallot` runs it, with an input that answers each approval prompt with `answers`. */
export async function mainHere(
  argv: readonly string[],
  env: Record<string, string>,
  cleanups: Array<() => Promise<void> | void>,
  answers: string[] = [],
) {
  for (const [name, value] of Object.entries({ NO_COLOR: '1', ...env })) vi.stubEnv(name, value)
  cleanups.push(() => {
    vi.unstubAllEnvs()
  })
  const input = new PassThrough()
  const out: string[] = []
  const err: string[] = []
  const code = await main(argv, {
    out: (line) => {
      out.push(line)
      if (/run it\? \[y\]es/.test(line)) input.write(`${answers.shift() ?? 'n'}\n`)
    },
    err: (line) => err.push(line),
    input,
    inputIsTerminal: answers.length > 0,
  })
  return { code, out: out.join('\n'), err: err.join('\n') }
}
