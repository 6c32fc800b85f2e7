import { existsSync } from 'node:fs'
import { loadConfig } from '@shallot/config'
import type { CliIO } from './cli.js'
import { UsageError } from './usage.js'

/** `shallot check FILE`: 0 when the file is valid, 1 with the config errors otherwise. */
export async function runCheck(file: string, io: CliIO): Promise<number> {
  if (!existsSync(file)) throw new UsageError(`no such file: ${file}`)
  try {
    await loadConfig(file)
    io.out(`${file}: ok`)
    return 0
  } catch (err) {
    io.err(err instanceof Error ? err.message : String(err))
    return 1
  }
}
