import { existsSync, readdirSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

// Workspace packages resolve to their TypeScript sources in tests (the "shallot-source" export
// condition), so tests never run against a stale build.
const conditions = ['shallot-source', 'import', 'module', 'node', 'default']
const nodeConditions = ['shallot-source', 'node', 'default']

const projectDirs = ['packages', 'examples'].flatMap((root) =>
  existsSync(root)
    ? readdirSync(root, { withFileTypes: true })
        .filter((entry) => entry.isDirectory() && existsSync(`${root}/${entry.name}/package.json`))
        .map((entry) => `${root}/${entry.name}`)
    : [],
)

const jsonReport = process.env.SHALLOT_VITEST_JSON

// Tests of framework majors that need Node >= 22 (ai 7, the MCP SDK v2 client) live in *.node22.test.ts files and run
// only on a Node that can load them: CI's second pass, on Node 24.
const nodeMajor = Number(process.versions.node.split('.')[0])
const exclude = nodeMajor >= 22 ? [] : ['**/*.node22.test.ts']

export default defineConfig({
  resolve: { conditions },
  // Vitest passes the ssr conditions to Node as --conditions, which then apply to require() too:
  // forcing `import` there hands CJS packages with an ESM wrapper (pg → pg-pool) a module namespace
  // instead of their class. Node adds `import` or `require` by itself, as each load needs.
  ssr: { resolve: { conditions: nodeConditions, externalConditions: nodeConditions } },
  test: {
    // Builds the workspace once before any test file starts: the tests that spawn the built packages need dist.
    globalSetup: ['.ci/vitest-build.ts'],
    // An unhandled rejection anywhere fails the run (vitest's default, stated so nobody turns it off).
    dangerouslyIgnoreUnhandledErrors: false,
    restoreMocks: true,
    // Vitest's default is one worker fewer than the cores: one worker on CI's two. Most long test files wait on
    // child processes and servers (the fleet, the CLI, the chaos quick run), so two files at once on two cores
    // halves the wall time without starving either; timing-sensitive tests run on manual clocks.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // CI asks for a JSON report beside the usual output, to count what ran.
    ...(jsonReport ? { reporters: ['default', 'json'], outputFile: { json: jsonReport } } : {}),
    projects: [
      ...projectDirs.map((dir) => ({
        extends: true,
        test: {
          name: dir.split('/')[1] as string,
          include: [`${dir}/src/**/*.test.ts`, `${dir}/test/**/*.test.ts`],
          exclude: ['**/node_modules/**', ...exclude],
        },
      })),
      // The agent bench's one-seed quick run: every contender runs every task (bench/agents).
      { extends: true, test: { name: 'bench-agents', include: ['bench/agents/**/*.test.ts'], exclude: ['**/node_modules/**'] } },
      // The chaos soak's checker and schedule, and its quick form: worker processes, Redis and PostgreSQL (bench/chaos).
      {
        extends: true,
        test: { name: 'bench-chaos', include: ['bench/chaos/**/*.test.ts'], exclude: ['**/node_modules/**', '**/dist/**'] },
      },
    ],
  },
})
