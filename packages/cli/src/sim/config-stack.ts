import { existsSync } from 'node:fs'
import { basename } from 'node:path'
import { checkConfig, createStackFromConfig, loadConfig } from '@shallot/config'
import { UsageError } from '../usage.js'
import type { NamedStack } from './command.js'

/** The one tool every simulated run calls. */
const SIM_TOOL = 'step'

/**
 * A simulated stack built from a config file, fresh for every run. The file gets the checks of
 * `shallot check` before any run starts. A simulated run calls one tool, `step`: the overrides the
 * file gives other tools under `tools:` (a `charge_card` of the application) have nothing to apply
 * to, so they are left out and `note` says which; `tools.step` is simulated.
 */
export async function configStack(file: string, note: (line: string) => void): Promise<NamedStack> {
  if (!existsSync(file)) throw new UsageError(`no such file: ${file}`)
  const check = await checkConfig(file)
  if (check.error !== undefined || check.config === undefined) throw check.error
  const label = basename(file)
  const checked = check.config
  const { tools, ...rest } = checked.document
  const others = Object.keys(tools).filter((name) => name !== SIM_TOOL)
  if (others.length === 0) return { label, build: (env) => createStackFromConfig(checked, env) }
  note(
    `shallot sim: ${label}: not simulated: the overrides under tools: for ${others.join(', ')} (a simulated run calls one tool, ${SIM_TOOL}; tools.${SIM_TOOL} is simulated)`,
  )
  // Read again without them: the same file, already checked, so nothing here can fail that did not above.
  const own = tools[SIM_TOOL]
  const config = await loadConfig({ ...rest, tools: own === undefined ? {} : { [SIM_TOOL]: own } }, { dir: checked.dir })
  return { label, build: (env) => createStackFromConfig(config, env) }
}
