// Writes shallot.schema.json from the zod schema (run `pnpm run schema`; it builds first).
// A test compares the committed file with a fresh generation, so the file cannot go stale.
import { writeFileSync } from 'node:fs'
import { configJsonSchemaText } from '../dist/index.js'

const target = new URL('../shallot.schema.json', import.meta.url)
writeFileSync(target, configJsonSchemaText())
console.log(`wrote ${target.pathname}`)
