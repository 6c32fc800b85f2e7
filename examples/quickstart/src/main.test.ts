import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'

// Runs the built example as a user would (`pnpm test` builds before vitest runs).
it('heals the mistyped path through the default stack and completes', async () => {
  const main = fileURLToPath(new URL('../dist/main.js', import.meta.url))
  const { stdout } = await promisify(execFile)(process.execPath, [main])
  expect(stdout).toMatch(/tool {3}✗ \{"error":"not_found","message":"ENOENT: no such file or directory/)
  expect(stdout).toContain('tool   ✓ fn main() { println!("hello from shallot"); }')
  expect(stdout.trim().endsWith('completed in 3 turns')).toBe(true)
})
