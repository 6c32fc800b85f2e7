#!/usr/bin/env node
import { main } from './cli.js'
import { terminalText } from './terminal-text.js'

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (err: unknown) => {
    console.error(terminalText(`shallot: ${err instanceof Error ? err.message : String(err)}`))
    process.exitCode = 1
  },
)
