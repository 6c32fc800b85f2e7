// The built-in model layer context-editing, named in a config file: its README's sample loads, and a run whose
// conversation outgrows the window completes through the file's model stack.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createAgent } from '@shallot/agent'
import { defineTool, type ModelAdapter } from '@shallot/core'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ConfigError, createStackFromConfig, loadConfig } from './index.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-context-editing-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function write(name: string, text: string): string {
  const file = join(dir, name)
  writeFileSync(file, text)
  return file
}

/** The README's YAML sample, as it is printed there. */
const readmeYaml = () => {
  const readme = readFileSync(new URL('../../context-editing/README.md', import.meta.url), 'utf8')
  return /```yaml\n([\s\S]*?)```/.exec(readme)?.[1] ?? ''
}

const readFile = defineTool({
  name: 'read_file',
  description: 'Reads a file',
  input: z.object({ n: z.number() }),
  effect: 'read',
  execute: ({ n }) => `file ${n}: ${'x'.repeat(15_000)}`,
})

/** Asks for a file per turn for six turns; refuses a conversation over 50,000 characters as the OpenAI API does. */
function model(): ModelAdapter {
  let turn = 0
  return {
    name: 'gpt-4o',
    async generate({ messages }) {
      const chars = messages.reduce((sum, m) => sum + (m.content?.length ?? 0), 0)
      if (chars > 50_000)
        throw Object.assign(new Error('maximum context length exceeded'), { status: 400, code: 'context_length_exceeded' })
      turn++
      return turn <= 6 ? { toolCalls: [{ id: `f${turn}`, name: 'read_file', args: { n: turn } }] } : { text: 'read six files' }
    },
  }
}

describe('context-editing in a config file', () => {
  it("the README's modelMiddleware sample loads, and the run it wraps completes where it would stop", async () => {
    const config = await loadConfig(write('shallot.yaml', readmeYaml()))
    expect(config.modelLayers.map((l) => l.name)).toEqual(['context-editing', 'retry', 'error-classifier', 'timeout'])
    const stack = createStackFromConfig(config, { tools: [readFile] })
    const edited: unknown[] = []
    const agent = createAgent({
      model: model(),
      stack,
      modelMiddleware: stack.modelMiddleware,
      onEvent: (e) => (e as { type: string }).type === 'model.context_edited' && edited.push(e),
    })
    expect(await agent.run({ input: 'read the files' })).toMatchObject({ status: 'completed', output: 'read six files' })
    expect(edited.length).toBeGreaterThan(0)

    const bare = createStackFromConfig(await loadConfig(write('bare.yaml', 'stack: []\nmodelMiddleware: [error-classifier]\n')), {
      tools: [readFile],
    })
    const stopped = await createAgent({ model: model(), stack: bare, modelMiddleware: bare.modelMiddleware }).run({
      input: 'read the files',
    })
    expect(stopped.status === 'stopped' && stopped.error.kind).toBe('context_exceeded')
  })

  it('checks its options at their line, and a typo of its name is suggested', async () => {
    const bad = write('bad.yaml', 'stack: []\nmodelMiddleware:\n  - context-editing: { keep: -1, strategy: summarize }\n')
    const error = await loadConfig(bad).catch((err: unknown) => err)
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as Error).message).toContain(
      'bad.yaml:3: modelMiddleware[0].context-editing.keep: expected a whole number from 0 to 100000, got -1',
    )
    expect((error as Error).message).toContain("context-editing.strategy: expected one of 'clearToolResults', 'keepLast'")
    const typo = write('typo.yaml', 'stack: []\nmodelMiddleware: [context-editting]\n')
    await expect(loadConfig(typo)).rejects.toThrow(/did you mean 'context-editing'\?/)
  })
})
