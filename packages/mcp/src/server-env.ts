/**
 * The variables the MCP SDK's `StdioClientTransport` passes on when given no environment (its
 * `getDefaultEnvironment()`, which it always merges in): the sudo-like minimum.
 */
export const MINIMAL_ENV_VARS: readonly string[] =
  process.platform === 'win32'
    ? [
        'APPDATA',
        'HOMEDRIVE',
        'HOMEPATH',
        'LOCALAPPDATA',
        'PATH',
        'PROCESSOR_ARCHITECTURE',
        'SYSTEMDRIVE',
        'SYSTEMROOT',
        'TEMP',
        'USERNAME',
        'USERPROFILE',
        'PROGRAMFILES',
      ]
    : ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER']

/**
 * Which of this process's variables a stdio server gets: `all` (every one, so `NODE_EXTRA_CA_CERTS`,
 * `HTTPS_PROXY` and the like reach an `npx` server), `minimal` ({@link MINIMAL_ENV_VARS} only), or
 * the minimum plus these names.
 */
export type ServerEnvInherit = 'all' | 'minimal' | readonly string[]

export interface ServerEnvOptions {
  /** Default `all`. */
  readonly inherit?: ServerEnvInherit
  /** Set for the server on top of what is inherited (a config's `env:`). */
  readonly env?: Readonly<Record<string, string>>
  /** The environment inherited from. Default `process.env`. */
  readonly from?: NodeJS.ProcessEnv
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * The `env` to give `StdioClientTransport`: without one, the SDK passes only {@link MINIMAL_ENV_VARS}
 * and a server started by `npx` behind a corporate proxy or CA fails on the certificate chain. A value
 * starting with `()` (an exported shell function) is never passed on, as the SDK does.
 *
 * @example
 * new StdioClientTransport({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'], env: serverEnv() })
 * new StdioClientTransport({ command: 'my-server', env: serverEnv({ inherit: ['HTTPS_PROXY'], env: { LOG: 'debug' } }) })
 */
export function serverEnv(options: ServerEnvOptions = {}): Record<string, string> {
  const { inherit = 'all', env = {}, from = process.env } = options
  let names: readonly string[]
  if (inherit === 'all') names = Object.keys(from)
  else if (inherit === 'minimal') names = MINIMAL_ENV_VARS
  else if (Array.isArray(inherit)) {
    const bad = inherit.find((n) => typeof n !== 'string' || !NAME.test(n))
    if (bad !== undefined)
      throw new TypeError(
        `serverEnv: inherit names environment variables (letters, digits and "_"), not ${JSON.stringify(String(bad)).slice(0, 60)}`,
      )
    names = [...MINIMAL_ENV_VARS, ...inherit]
  } else
    throw new TypeError(
      `serverEnv: inherit must be "all", "minimal" or a list of variable names, not ${JSON.stringify(inherit)?.slice(0, 60)}`,
    )
  // A prototype-free record: a variable named __proto__ is a variable, not a prototype.
  const out: Record<string, string> = Object.create(null)
  for (const name of names) {
    const value = Object.hasOwn(from, name) ? from[name] : undefined
    if (typeof value === 'string' && !value.startsWith('()')) out[name] = value
  }
  for (const [name, value] of Object.entries(env)) out[name] = value
  return { ...out }
}
