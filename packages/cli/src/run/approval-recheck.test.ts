import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type FakeProvider, fakeProvider } from '@shallot/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { childEnv, filesystemMcp, mainHere, shallot, tempDir } from './run.test-helper.js'

// Decision 600, end to end: the policy file is edited between `shallot run` (a process of its own, which
// checkpoints the stopped run to disk) and `shallot resume` (main() here, reading the file and the checkpoint afresh).

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const APPROVE = `stack:
  - policy:
      rules:
        - { id: writes, action: approve, tools: write_file, reason: writing a file needs a person }
`
/** The same rule, written another way: block style, keys reordered, the tool in a list, other spacing. */
const APPROVE_REWRITTEN = `# reformatted by a person; the rule is the same
stack:
  -   policy:
        rules:
          -   reason:  "writing a file needs a person"
              tools: [ write_file ]
              action: approve
              id: writes
`
const REASON_EDITED = APPROVE.replace('writing a file needs a person', 'writing a file needs two people')
const FROZEN = `stack:
  - policy:
      rules:
        - { id: frozen, action: deny, tools: write_file, reason: writes are frozen for the audit }
        - { id: writes, action: approve, tools: write_file, reason: writing a file needs a person }
`

const keys = (fake: FakeProvider) => ({ OPENAI_API_KEY: 'sk-fake-4242', OPENAI_BASE_URL: fake.openaiBaseURL })
const env = (fake: FakeProvider) => childEnv(keys(fake))

describe('shallot resume re-checks an approval against the policy file as it reads now', { timeout: 60_000 }, () => {
  it('edited rule: asked again, nothing written; a rule that now denies: refused with the reason; an equivalent file: the approval stands', async () => {
    const fake = await fakeProvider({})
    cleanups.push(() => fake.close())
    const dir = await tempDir()
    cleanups.push(dir.remove)
    const target = join(dir.root, 'note.txt')
    const config = join(dir.root, 'shallot.yaml')
    const args = [
      '--model',
      'openai:test-model',
      '--config',
      config,
      '--mcp',
      filesystemMcp(dir.root),
      '--checkpoints',
      join(dir.root, 'run.db'),
    ]
    const script = () =>
      fake.script({ toolCalls: [{ id: 'call_w', name: 'write_file', args: { path: target, content: 'from the model' } }] }, (request) => ({
        text: `Read: ${request.toolResults.map((r) => r.content).join(' | ')}`,
      }))

    script()
    writeFileSync(config, APPROVE)
    expect((await shallot(['run', ...args, '--run-id', 'edit-1', 'Write the note'], env(fake)).exited).code).toBe(1)
    // A person approves, but first someone edits the rule that asked.
    writeFileSync(config, REASON_EDITED)
    const asked = await mainHere(['resume', 'edit-1', ...args, '--approve', 'call_w'], keys(fake), cleanups)
    expect(asked.err).toBe('')
    expect(asked.code).toBe(1)
    expect(asked.out).toContain('stopped: user_input_required')
    expect(asked.out).toContain(
      'writing a file needs two people; asked again: the policy changed since it was approved (rule writes was changed)',
    )
    expect(existsSync(target)).toBe(false)
    // Approved again under the edited rule, but the file changed once more: a rule now denies the write.
    writeFileSync(config, FROZEN)
    const refused = await mainHere(['resume', 'edit-1', ...args, '--approve', 'call_w'], keys(fake), cleanups)
    expect(refused.code).toBe(0)
    expect(refused.out).toContain(
      'blocked by policy: writes are frozen for the audit (the policy changed since this call was approved under rule writes: rule frozen now denies it)',
    )
    expect(existsSync(target)).toBe(false)

    script()
    writeFileSync(config, APPROVE)
    expect((await mainHere(['run', ...args, '--run-id', 'same-1', 'Write the note'], keys(fake), cleanups)).code).toBe(1)
    writeFileSync(config, APPROVE_REWRITTEN)
    const stands = await mainHere(['resume', 'same-1', ...args, '--approve', 'call_w'], keys(fake), cleanups)
    expect(stands.err).toBe('')
    expect(stands.code).toBe(0)
    expect(stands.out).toContain(`completed: Read: Successfully wrote to ${target}`)
    expect(readFileSync(target, 'utf8')).toBe('from the model')
  })
})
