import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'

// Runs the built example as a user would (`pnpm test` builds before vitest runs).
it('heals a mistyped path, opens a circuit, and stops a stubborn model, all inside an Agents SDK run', { timeout: 30_000 }, async () => {
  const main = fileURLToPath(new URL('../dist/main.js', import.meta.url))
  const { stdout } = await promisify(execFile)(process.execPath, [main])
  expect(stdout).toMatch(/tool {3}✗ \{"error":"not_found","message":"ENOENT: no such file or directory/)
  expect(stdout).toContain('tool   ✓ fn main() { println!("hello from the Agents SDK"); }')
  expect(stdout).toContain('completed in 3 model turns')
  expect(stdout).toMatch(/tool {3}✗ \{"error":"circuit_open"/)
  expect(stdout).toContain('deploy_status ran 2 times for 3 calls')
  expect(stdout).toMatch(/run\(\) rejected: LoopError loop_detected/)
})
