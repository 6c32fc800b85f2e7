import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Agent } from '@shallot/agent'
import { handoffOf } from '../index.js'

/** Runs a task; when it stops, writes what a person needs to pick it up, and says where. */
export async function runOrHandOff(agent: Agent, runId: string, input: string, folder: string): Promise<string> {
  const outcome = await agent.run({ runId, input })
  if (outcome.status === 'completed') return outcome.output
  const file = join(folder, `${runId}.handoff.md`)
  const resumeCommand = `node resume.js ${runId}` // however your people continue a run
  await writeFile(file, handoffOf(outcome, { resumeCommand, secrets: [process.env.STRIPE_KEY ?? ''] }))
  return `stopped (${outcome.error.kind}); the handoff is ${file}`
}
