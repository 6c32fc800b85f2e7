import { existsSync } from 'node:fs'
import { basename } from 'node:path'
import { createStackFromConfig, loadConfig } from '@shallot/config'
import { UsageError } from '../usage.js'
import type { NamedStack } from './command.js'

/** A simulated stack built from a config file, fresh for every run. */
export async function configStack(file: string): Promise<NamedStack> {
  if (!existsSync(file)) throw new UsageError(`no such file: ${file}`)
  const config = await loadConfig(file)
  return { label: basename(file), build: (env) => createStackFromConfig(config, env) }
}
