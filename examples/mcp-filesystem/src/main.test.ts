import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'

// Runs the built example as a user would (`pnpm test` builds before vitest runs).
it('heals a mistyped path over MCP, then opens one circuit for the whole server when it dies', { timeout: 30_000 }, async () => {
  const main = fileURLToPath(new URL('../dist/main.js', import.meta.url))
  const { stdout } = await promisify(execFile)(process.execPath, [main])
  expect(stdout).toContain(`tool   ✗ {"error":"not_found","message":"ENOENT: no such file or directory, open '<project>/src/mian.rs'"`)
  expect(stdout).toContain('tool   ✓ fn main() { println!("hello over MCP"); }')
  expect(stdout).toMatch(/tool {3}✗ \{"error":"network_error"/)
  expect(stdout).toMatch(/model {2}→ directory_tree .*\ntool {3}✗ \{"error":"circuit_open"/)
  expect(stdout).toContain('UNAVAILABLE')
  expect(stdout.trim().endsWith('completed in 5 turns')).toBe(true)
})
