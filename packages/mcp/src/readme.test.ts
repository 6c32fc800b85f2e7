import { readFileSync } from 'node:fs'
import { scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { filesystemServerEntry, tempProject } from './filesystem-server.test-helper.js'
import { askFilesystem } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/mcp'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs against the real filesystem server: a mistyped path, then the right one', { timeout: 30_000 }, async () => {
    const project = await tempProject({ 'src/main.rs': 'fn main() {}\n' })
    try {
      const model = scriptedModel([
        { toolCalls: [{ name: 'read_text_file', args: { path: `${project.root}/src/mian.rs` } }] },
        { toolCalls: [{ name: 'read_text_file', args: { path: `${project.root}/src/main.rs` } }] },
        ({ lastResults }) => ({ text: lastResults[0]?.content ?? '' }),
      ])
      const outcome = await askFilesystem(model, filesystemServerEntry, project.root)
      expect(outcome).toMatchObject({ status: 'completed', output: 'fn main() {}\n' })
    } finally {
      await project.remove()
    }
  })
})
