// An agent whose retry policy is swapped in its YAML file while it runs. The program rewrites the
// file itself between the agent's turns, so the demo needs nothing else; watch the second call give up.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runSwapScene } from './swap-scene.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-config-swap-'))
try {
  await runSwapScene({ dir, print: (line) => console.log(line) })
} finally {
  rmSync(dir, { recursive: true, force: true })
}
