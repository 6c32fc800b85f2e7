// Vitest's global setup: builds the workspace (`tsc -b`, incremental) once, before any test file starts.
// Tests import workspace packages as TypeScript sources, but some spawn child processes that load the BUILT
// packages (dist): fleet workers, the CLI, the chaos soak, the examples. When each such file built in its own
// beforeAll, two vitest workers' builds rewrote the same dist files while a child spawned by a third file was
// loading them. One build here, finished before any worker exists, leaves nothing to race. When everything
// is built already (CI builds before it tests) it only compares timestamps: about a second and a half.
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { TestProject } from 'vitest/node'

const root = fileURLToPath(new URL('..', import.meta.url))
// The root tsconfig references every package and example; the chaos soak (bench/chaos) is built on its own.
const projects = ['tsconfig.json', 'bench/chaos']

async function build(): Promise<void> {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  try {
    await promisify(execFile)(process.execPath, [tsc, '-b', ...projects], { cwd: root, maxBuffer: 64 * 1024 * 1024 })
  } catch (err) {
    // tsc prints its diagnostics on stdout: they are the message, not the exit code.
    const { stdout, stderr } = err as { stdout?: string; stderr?: string }
    throw new Error(`tsc -b ${projects.join(' ')} failed; the tests that spawn built packages need dist:\n${stdout ?? ''}${stderr ?? ''}`)
  }
}

export default async function setup(project: TestProject): Promise<void> {
  // Every project extends the root config, so each one with tests queued runs this file too: only the root builds.
  if (!project.isRootProject()) return
  await build()
  // In watch mode, a rerun builds again first (incremental), so a child spawned then runs the sources as edited.
  project.onTestsRerun(build)
}
