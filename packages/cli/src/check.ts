import { existsSync } from 'node:fs'
import { checkConfig, displayFile } from '@shallot/config'
import { policyDefinition } from '@shallot/policy'
import type { CliIO } from './cli-io.js'
import { UsageError } from './usage.js'

/**
 * `shallot check FILE`: the checks of `loadConfig` and of building the stack (`createStackFromConfig`,
 * `shallot sim --config`), every problem at once; 0 when the file is valid, 1 with its problems
 * otherwise. What only the application's code can confirm (the tool names) is said, not passed over.
 */
export async function runCheck(file: string, io: CliIO): Promise<number> {
  if (!existsSync(file)) throw new UsageError(`no such file: ${file}`)
  // The policy layer is named like a built-in, as `shallot run` names it: a file `run` accepts, `check` accepts.
  const check = await checkConfig(file, { middleware: [policyDefinition] })
  if (check.error !== undefined) {
    io.err(check.error.message)
    io.err(`${file}: ${check.issues.length} problem${check.issues.length === 1 ? '' : 's'}`)
    return 1
  }
  const layers = check.config?.layers.map((l) => l.name) ?? []
  const summary = `${layers.length} layer${layers.length === 1 ? '' : 's'}${layers.length > 0 ? `: ${layers.join(', ')}` : ''}`
  if (check.unchecked.length === 0) {
    io.out(`${file}: ok (${summary})`)
    return 0
  }
  io.out(`${file}: ok as far as the file goes (${summary})`)
  for (const note of check.unchecked) io.out(`${displayFile(check.config?.file)}: not checked: ${note}`)
  return 0
}
