import { existsSync } from 'node:fs'
import { basename } from 'node:path'
import { checkConfig, createStackFromConfig } from '@shallot/config'
import { UsageError } from '../usage.js'
import type { NamedStack } from './command.js'

/** The one tool every simulated run calls. */
const SIM_TOOLS = ['step']

/**
 * A simulated stack built from a config file, fresh for every run. The file gets the checks of
 * `shallot check`, with the simulation's tool names, before any run starts.
 */
export async function configStack(file: string): Promise<NamedStack> {
  if (!existsSync(file)) throw new UsageError(`no such file: ${file}`)
  const check = await checkConfig(file, { tools: SIM_TOOLS })
  if (check.error !== undefined || check.config === undefined) throw check.error
  const config = check.config
  return { label: basename(file), build: (env) => createStackFromConfig(config, env) }
}
