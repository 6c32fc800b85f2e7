import { writeFile } from 'node:fs/promises'
import { type AgentOptions, createAgent } from '@shallot/agent'
import { recordRun, renderHtml } from '../index.js'

/** Runs one task and writes its timeline page; the record is returned for `JSON.stringify` too. */
export async function runWithTimeline(options: AgentOptions, input: string, htmlFile: string) {
  const recorder = recordRun({ clock: options.clock })
  const agent = createAgent({ ...options, model: recorder.model(options.model) })
  recorder.listen(agent.stack)
  const record = recorder.finish(await agent.run({ input }))
  await writeFile(htmlFile, renderHtml(record))
  return record
}
