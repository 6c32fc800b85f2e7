import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs'
import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { PassThrough } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { vi } from 'vitest'
import { main } from '../cli.js'

const packageDir = fileURLToPath(new URL('../..', import.meta.url))
/** The built command, as `npx shallot` runs it. */
export const binPath = join(packageDir, 'dist/bin.js')

/**
 * Builds the CLI and what it references (incremental: quick when nothing changed), so the child runs this source.
 * Every test file that spawns the CLI calls this in its own worker: when the sources changed, two `tsc -b` at once
 * rewrite the same dist files, and a child spawned by a file whose build already finished can load one half-written.
 * So the builds take turns (a lock folder), and the build runs off the worker's thread, so the hook's timeout holds.
 */
export async function buildCli(): Promise<void> {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  const release = await buildLock()
  try {
    await promisify(execFile)(process.execPath, [tsc, '-b', packageDir])
  } finally {
    release()
  }
}

const LOCK = join(tmpdir(), 'shallot-cli-build.lock')

/** Takes the build lock (mkdir is atomic, the owner's pid inside), waiting for its removal while another worker builds. */
async function buildLock(): Promise<() => void> {
  for (;;) {
    try {
      mkdirSync(LOCK)
      writeFileSync(join(LOCK, 'pid'), String(process.pid))
      return () => rmSync(LOCK, { recursive: true, force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    await new Promise<void>((resolve) => {
      const watcher = watch(dirname(LOCK), () => again())
      function again() {
        watcher.close()
        resolve()
      }
      // Removed before the watcher listened, or left by a worker that died mid-build: try again now.
      if (!existsSync(LOCK)) again()
      else if (ownerDied()) {
        rmSync(LOCK, { recursive: true, force: true })
        again()
      }
    })
  }
}

function ownerDied(): boolean {
  let pid: number
  try {
    pid = Number(readFileSync(join(LOCK, 'pid'), 'utf8'))
  } catch {
    return false // Taken a moment ago, its pid not yet written; its removal wakes us.
  }
  try {
    process.kill(pid, 0)
    return false
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH'
  }
}

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
