import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '@shallot/config'
import { defineTool } from '@shallot/core'
import { z } from 'zod'
import { policyDefinition } from './definition.js'

/** Tools that count how often they really ran, for the policy's tests. */
export function countedTools() {
  const runs = { transfer: 0, read_file: 0, fetch_url: 0, delete_user: 0, delete_file: 0, tag: 0 }
  const transfer = defineTool({
    name: 'transfer',
    description: 'Move money between accounts.',
    input: z.object({ to: z.string(), amountCents: z.number() }),
    effect: 'write',
    execute: ({ to, amountCents }) => {
      runs.transfer++
      return `sent ${amountCents} to ${to}`
    },
  })
  const readFile = defineTool({
    name: 'read_file',
    description: 'Read a file.',
    input: z.object({ path: z.string() }),
    effect: 'read',
    execute: ({ path }) => {
      runs.read_file++
      return `contents of ${path}`
    },
  })
  const fetchUrl = defineTool({
    name: 'fetch_url',
    description: 'Fetch a URL.',
    input: z.object({ url: z.string() }),
    effect: 'read',
    execute: ({ url }) => {
      runs.fetch_url++
      return `body of ${url}`
    },
  })
  const deleteUser = defineTool({
    name: 'delete_user',
    description: 'Delete a user.',
    input: z.object({ id: z.string() }),
    effect: 'write',
    execute: () => {
      runs.delete_user++
      return 'deleted'
    },
  })
  const deleteFile = defineTool({
    name: 'delete_file',
    description: 'Delete a file.',
    input: z.object({ path: z.string() }),
    effect: 'write',
    execute: () => {
      runs.delete_file++
      return 'deleted'
    },
  })
  const tag = defineTool({
    name: 'tag',
    description: 'Tag a ticket.',
    input: z.object({ label: z.unknown() }),
    effect: 'idempotent',
    execute: () => {
      runs.tag++
      return 'tagged'
    },
  })
  return { runs, transfer, tools: [transfer, readFile, fetchUrl, deleteUser, deleteFile, tag] }
}

/** The fenced blocks of one language in a markdown text, in order. */
export function fencedBlocks(markdown: string, lang: string): string[] {
  const blocks: string[] = []
  const fence = new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'gm')
  for (const match of markdown.matchAll(fence)) blocks.push(match[1] as string)
  return blocks
}

/** Loads a config file's text the way users do: written to a file, read by `loadConfig`, with the policy named. */
export async function loadYaml(yaml: string, name: string) {
  const dir = mkdtempSync(join(tmpdir(), 'shallot-policy-'))
  const file = join(dir, name)
  writeFileSync(file, yaml)
  try {
    return await loadConfig(file, { middleware: [policyDefinition] })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
