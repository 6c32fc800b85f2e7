// The newcomer's walk-through of issue 37, timed: packed tarballs into a fresh npm project outside the workspace, the
// README's Example against a local OpenAI-compatible server, `npx shallot run` with the filesystem MCP server from npx,
// Ctrl-C (SIGINT to the command's process group, as a terminal sends it), the handoff file, and the printed resume
// command pasted back into a shell. Each step is the command a person types, run by bash in the project; its wall time,
// exit code and last lines are printed, and a JSON summary is written. Not run by CI: the installs take minutes.
//   node .ci/walkthrough/run.mjs TARBALL_DIR [NODE_BINARY] [--keep]      (--keep leaves the project in place)
import { execFileSync, spawn } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const repo = resolve(here, '../..')
const keep = process.argv.includes('--keep')
const [tarballs, nodeBin = process.execPath] = process.argv.slice(2).filter((a) => a !== '--keep')
if (tarballs === undefined || !existsSync(tarballs)) {
  console.error('usage: node .ci/walkthrough/run.mjs TARBALL_DIR [NODE_BINARY]')
  process.exit(2)
}
const work = mkdtempSync(join(tmpdir(), 'shallot-walk-'))
if (work.startsWith(repo)) throw new Error(`${work} is inside the workspace`)
const app = join(work, 'app')
const bin = join(work, 'bin')
mkdirSync(app)
mkdirSync(bin)
// The Node under test first on PATH, so `node`, `npm` and `npx` in every typed command are that Node's.
symlinkSync(resolve(nodeBin), join(bin, 'node'))
const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, NO_COLOR: '1' }
for (const k of Object.keys(env)) if (/^(OPENAI|ANTHROPIC)_|^npm_/.test(k)) delete env[k]
const major = Number(execFileSync(nodeBin, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }))
const steps = []

/** Runs one typed command with bash in the project, timed; resolves to its exit code and output. */
function type(title, command, { extraEnv = {}, interruptWhen, allowFail = false } = {}) {
  return new Promise((done) => {
    const started = performance.now()
    const child = spawn('bash', ['-c', command], { cwd: app, env: { ...env, ...extraEnv }, detached: true })
    let out = ''
    let interruptedAt
    let readyMs
    const take = (chunk) => {
      out += chunk
      // `shallot run` prints its first line once the MCP servers are up and their tools listed.
      if (readyMs === undefined && /^(run|resuming run) \S+ · /m.test(out)) readyMs = Math.round(performance.now() - started)
      if (interruptWhen !== undefined && interruptedAt === undefined && interruptWhen(out)) {
        interruptedAt = performance.now()
        process.kill(-child.pid, 'SIGINT') // Ctrl-C: the whole foreground group
      }
    }
    child.stdout.on('data', take)
    child.stderr.on('data', take)
    child.on('close', (code, signal) => {
      const ms = Math.round(performance.now() - started)
      const step = { title, command, ms, code, signal, out }
      if (interruptedAt !== undefined) step.afterCtrlCMs = Math.round(performance.now() - interruptedAt)
      if (readyMs !== undefined) step.serversUpMs = readyMs
      steps.push(step)
      console.log(
        `\n## ${title} — ${(ms / 1000).toFixed(1)} s, exit ${code ?? signal}\n$ ${command}\n${out.trimEnd().split('\n').slice(-25).join('\n')}`,
      )
      if (code !== 0 && !allowFail) {
        finish()
        throw new Error(`step failed: ${title}`)
      }
      done(step)
    })
  })
}

/** Starts the local model server for a scenario; resolves to its base URL and a stop function. */
async function modelServer(scenario) {
  const urlFile = join(work, `${scenario}.url`)
  const child = spawn(nodeBin, [join(app, 'model-server.mjs'), scenario, urlFile, app], {
    cwd: app,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  for (let i = 0; i < 200 && !existsSync(urlFile); i++) await new Promise((r) => setTimeout(r, 50))
  return { url: readFileSync(urlFile, 'utf8'), stop: () => child.kill('SIGTERM') }
}

function finish() {
  const summary = { node: execFileSync(nodeBin, ['--version'], { encoding: 'utf8' }).trim(), app, steps }
  writeFileSync(join(work, 'summary.json'), JSON.stringify(summary, null, 2))
  console.log(`\nsummary: ${join(work, 'summary.json')}`)
  for (const s of steps) {
    const notes = [
      s.serversUpMs && `servers up at ${(s.serversUpMs / 1000).toFixed(1)} s`,
      s.afterCtrlCMs && `${s.afterCtrlCMs} ms from Ctrl-C to exit`,
    ]
    const extra = notes.filter(Boolean).join(', ')
    console.log(
      `${String((s.ms / 1000).toFixed(1)).padStart(7)} s  exit ${String(s.code ?? s.signal).padEnd(7)} ${s.title}${extra ? ` (${extra})` : ''}`,
    )
  }
  if (!keep) rmSync(app, { recursive: true, force: true })
}

const tgz = readdirSync(tarballs)
  .filter((f) => f.endsWith('.tgz'))
  .map((f) => join(resolve(tarballs), f))
await type('node and npm', 'node --version && npm --version')
await type('a fresh project', 'npm init -y >/dev/null && npm pkg set type=module && echo ok')
// The README's three install lines in one; the packages come from the tarballs, as the registry would hand them out.
// On Node 20 the README's note: ai 7 needs Node 22, so ai@6 and @ai-sdk/openai@3. Install scripts run after (below).
const aisdk = major >= 22 ? 'ai @ai-sdk/openai' : 'ai@6 @ai-sdk/openai@3'
await type('npm install (the packages, zod, the AI SDK)', `npm install --no-audit --no-fund --ignore-scripts ${tgz.join(' ')} zod ${aisdk}`)
// better-sqlite3 (under @shallot/cli's SQLite store) has no prebuilt binary reachable here; its source build takes
// minutes, so the one the CI already built for this Node is reused, as .ci/consumer-smoke does.
const abi = execFileSync(nodeBin, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).trim()
const cached = join(process.env.HOME ?? '/root', `.cache/shallot-ci/better-sqlite3-12.11.1-node-v${abi}-linux-x64-headers-24.18.1.node`)
const own = execFileSync('node', ['-p', 'require("path").dirname(require.resolve("better-sqlite3/package.json"))'], {
  cwd: join(repo, 'packages/store-sqlite'),
  encoding: 'utf8',
}).trim()
const built = existsSync(cached) ? cached : join(own, 'build/Release/better_sqlite3.node')
mkdirSync(join(app, 'node_modules/better-sqlite3/build/Release'), { recursive: true })
copyFileSync(built, join(app, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'))
await type('better-sqlite3 loads', `node -e "new (require('better-sqlite3'))(':memory:'); console.log('ok')"`)

// The README's Example, as printed, saved as example.mjs (it is plain JavaScript), with the file it asks about.
const readme = readFileSync(join(repo, 'README.md'), 'utf8').split(/^## Example$/m)[1] ?? ''
const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1]
if (example === undefined) throw new Error('no ts block under ## Example in README.md')
writeFileSync(join(app, 'example.mjs'), example)
mkdirSync(join(app, 'src'))
writeFileSync(join(app, 'src/main.rs'), 'fn main() { println!("hello from a newcomer"); }\n')
copyFileSync(join(here, 'model-server.mjs'), join(app, 'model-server.mjs'))
const readmeServer = await modelServer('readme')
await type('the README Example against a local OpenAI-compatible server', 'node example.mjs', {
  extraEnv: { OPENAI_BASE_URL: readmeServer.url, OPENAI_API_KEY: 'sk-local' },
})
readmeServer.stop()

// shallot run with the filesystem server from npx, against the local server; Ctrl-C once turn 1's result is printed.
const runServer = await modelServer('run')
const keys = { OPENAI_BASE_URL: runServer.url, OPENAI_API_KEY: 'sk-local' }
const run = await type(
  'npx shallot run … --mcp "npx -y @modelcontextprotocol/server-filesystem ." (Ctrl-C in turn 2)',
  'npx shallot run --model openai:gpt-4o-mini --mcp "npx -y @modelcontextprotocol/server-filesystem ." --checkpoints run.db --report report.md "List the files here and say what this project is"',
  { extraEnv: keys, interruptWhen: (out) => /turn {2}1[\s\S]*✓/.test(out), allowFail: true },
)
const handoff = /handoff for a person: (\S+)/.exec(run.out)?.[1]
if (handoff !== undefined) await type('read the handoff file', `cat ${handoff}`)
const resume = /^ {2}resume: (.+)$/m.exec(run.out)?.[1]
if (resume !== undefined) {
  const pasted = await type('the printed resume command, pasted', resume, { extraEnv: keys, allowFail: true })
  if (pasted.code !== 0) await type('the resume command through npx', `npx ${resume}`, { extraEnv: keys, allowFail: true })
}
runServer.stop()

// A tool that waits long parks the run: busy.mjs is rate limited until status.json exists; a breaker that opens on the
// first failure for 3 s refuses the second call with that wait, and --park-after 1000 parks the run instead.
copyFileSync(join(here, 'busy.mjs'), join(app, 'busy.mjs'))
writeFileSync(
  join(app, 'shallot.yaml'),
  'stack:\n  - circuit-breaker: { policy: { consecutive: { threshold: 1 } }, cooldownMs: 3000 }\n  - retry: { maxAttempts: 1 }\n',
)
const parkServer = await modelServer('park')
const parkKeys = { OPENAI_BASE_URL: parkServer.url, OPENAI_API_KEY: 'sk-local' }
const parked = await type(
  'npx shallot run … --park-after 1000 (a circuit open for 3 s)',
  'npx shallot run --model openai:gpt-4o-mini --config shallot.yaml --mcp "node busy.mjs" --checkpoints park.db --park-after 1000 "Read status.json once the service is back"',
  { extraEnv: parkKeys, allowFail: true },
)
const wakeAt = Date.parse(/^parked until (\S+) /m.exec(parked.out)?.[1] ?? '')
const parkedResume = /^ {2}resume: (.+)$/m.exec(parked.out)?.[1]
if (parkedResume !== undefined && Number.isFinite(wakeAt)) {
  writeFileSync(join(app, 'status.json'), '{"up":true}')
  await new Promise((r) => setTimeout(r, Math.max(0, wakeAt - Date.now() + 100)))
  await type("the parked run's resume command, pasted after its wake time", parkedResume, { extraEnv: parkKeys })
}
parkServer.stop()
finish()
