// A local OpenAI-compatible model server for the walk-through (fakeProvider from the installed @shallot/testing,
// answering Chat Completions and Responses as a real server would). It writes its base URL to argv[3] and runs until
// killed, logging each request's API and model to stderr.
//   node model-server.mjs readme|run|park URL_FILE [FOLDER]
// readme: the README's Example — read_file on a mistyped path, then the right one, then an answer quoting the file.
// run:    shallot run's task over the filesystem MCP server — list FOLDER, then a turn that never answers (the
//         moment to press Ctrl-C), then, resumed, read FOLDER/package.json and answer.
// park:   shallot run --park-after over busy.mjs — a read rate limited (its circuit opens), the same read again
//         (refused by the open circuit: the run parks), then, resumed, an answer from the read's result.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fakeProvider } from '@shallot/testing'

const [scenario, urlFile, folder = process.cwd()] = process.argv.slice(2)
const scripts = {
  readme: [
    { toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
    { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] },
    (request) => ({ text: `src/main.rs prints a greeting: ${request.toolResults.at(-1)?.content.trim()}` }),
  ],
  run: [
    { text: 'Looking around.', toolCalls: [{ name: 'list_directory', args: { path: folder } }] },
    { fault: 'hang' },
    { toolCalls: [{ name: 'read_file', args: { path: join(folder, 'package.json') } }] },
    (request) => ({ text: `A Node project; its package.json says: ${request.toolResults.at(-1)?.content.slice(0, 80)}` }),
  ],
  park: [
    { toolCalls: [{ name: 'busy_read', args: { path: 'status.json' } }] },
    { toolCalls: [{ name: 'busy_read', args: { path: 'status.json' } }] },
    (request) => ({ text: `The service is back: ${request.toolResults.at(-1)?.content}` }),
  ],
}
if (!(scenario in scripts)) {
  console.error(`model-server: scenario must be readme, run or park, not ${scenario}`)
  process.exit(2)
}
const provider = await fakeProvider({ script: scripts[scenario] })
let seen = 0
setInterval(() => {
  for (const r of provider.requests.slice(seen)) console.error(`model-server: ${r.api} ${r.model}`)
  seen = provider.requests.length
}, 100)
writeFileSync(urlFile, provider.openaiBaseURL)
process.on('SIGTERM', () => provider.close().then(() => process.exit(0)))
