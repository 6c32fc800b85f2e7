// Runs the README's example (argv[2]) under plain Node against a local OpenAI-compatible server: fakeProvider from
// the installed @shallot/testing, serving only OpenAI's Chat Completions API (as vLLM, Ollama and most proxies do) as
// gpt-4o-mini would. The model mistypes the path,
// reads the soft not_found, asks again, then answers; the example's own stdout is printed, its stderr must be empty.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fakeProvider } from '@shallot/testing'

const provider = await fakeProvider({
  apis: ['openai-chat'],
  script: [
    { toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
    { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] },
    (request) => ({ text: `src/main.rs: ${request.toolResults.at(-1)?.content.trim()}` }),
  ],
})
try {
  const env = { ...process.env, OPENAI_BASE_URL: provider.openaiBaseURL, OPENAI_API_KEY: 'sk-consumer-smoke' }
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [process.argv[2]], { env, timeout: 60_000 })
  if (stderr !== '') throw new Error(`the README example wrote to stderr:\n${stderr}`)
  const misread = provider.requests.find((r) => r.api !== 'openai-chat' || r.model !== 'gpt-4o-mini')
  if (misread !== undefined) throw new Error(`unexpected request: ${misread.method} ${misread.path} (${misread.model})`)
  process.stdout.write(stdout.trimEnd())
} finally {
  await provider.close()
}
