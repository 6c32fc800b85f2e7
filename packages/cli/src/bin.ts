#!/usr/bin/env node
import { main } from './cli.js'

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (err: unknown) => {
    console.error(`shallot: ${err instanceof Error ? err.message : String(err)}`)
    process.exitCode = 1
  },
)
