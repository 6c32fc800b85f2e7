import { statSync } from 'node:fs'
import { delimiter, join } from 'node:path'

const isFile = (path: string) => {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/**
 * How a person types the command the CLI prints (the resume line, the handoff's): `shallot` when one is on their PATH
 * (a global install), else `npx shallot` (installed in the project, or run through npx, where a pasted `shallot …`
 * is "command not found"). The PATH entries npm and npx add for the running command (`…/node_modules/.bin`) do not
 * count: the person's own shell does not have them.
 *
 * @example
 * `${commandWord(process.env)} resume run-1 --checkpoints run.db` // 'npx shallot resume …' in a project install
 */
export function commandWord(env: NodeJS.ProcessEnv): string {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '' || /node_modules[\\/]\.bin[\\/]?$/.test(dir)) continue
    if (isFile(join(dir, 'shallot')) || isFile(join(dir, 'shallot.cmd'))) return 'shallot'
  }
  return 'npx shallot'
}
