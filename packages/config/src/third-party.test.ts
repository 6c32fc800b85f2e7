import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { defineTool } from '@shallot/core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { ConfigError, createStackFromConfig, loadConfig, loadMiddleware, MiddlewareLoadError } from './index.js'
import { resolvePackage } from './resolve-package.js'

// A throwaway project: a config file beside node_modules holding packages installed by name.
const workspace = mkdtempSync(join(tmpdir(), 'shallot-workspace-'))
const modules = join(workspace, 'node_modules')

function install(name: string, manifest: object, files: Record<string, string>) {
  const root = join(modules, ...name.split('/'))
  mkdirSync(root, { recursive: true })
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name, version: '1.0.0', ...manifest }))
  for (const [file, text] of Object.entries(files)) writeFileSync(join(root, file), text)
}

// Made without @shallot/core, as another copy of it would: a definition is recognised by its brand.
const SHOUT = `
import { z } from 'zod'
const options = z.strictObject({ suffix: z.string().min(1).default('!') })
const create = ({ suffix }) => async function shout(ctx, next) {
  await next()
  if (typeof ctx.result?.value === 'string') ctx.result = { value: ctx.result.value.toUpperCase() + suffix }
}
export default Object.freeze({
  kind: 'shallot.middleware',
  name: '@acme/shallot-shout',
  description: 'upper-cases string results',
  options,
  create,
  build: (raw, env = {}) => create(options.parse(raw ?? {}), env),
})
`

beforeAll(() => {
  mkdirSync(modules, { recursive: true })
  symlinkSync(dirname(createRequire(import.meta.url).resolve('zod/package.json')), join(modules, 'zod'), 'dir')
  // ESM only: an exports map with an import condition and nothing require() can use.
  install('@acme/shallot-shout', { type: 'module', exports: { '.': { import: './index.js' } } }, { 'index.js': SHOUT })
  install('@acme/not-a-middleware', { type: 'module', exports: './index.js' }, { 'index.js': 'export default { hello: "world" }\n' })
  install(
    '@acme/broken',
    { type: 'module', exports: './index.js' },
    { 'index.js': 'throw new Error("cannot start: LICENSE_KEY is not set")\n' },
  )
  install(
    'shallot-tag',
    { main: 'main.cjs' },
    {
      'main.cjs': `
const { z } = require('zod')
const options = z.strictObject({ tag: z.string() })
const create = ({ tag }) => async function tagged(ctx, next) { await next(); ctx.result = { value: tag + ':' + ctx.result.value } }
exports.definition = { kind: 'shallot.middleware', name: 'shallot-tag', description: '', options, create, build: (raw) => create(options.parse(raw)) }
`,
    },
  )
})
afterAll(() => rmSync(workspace, { recursive: true, force: true }))

let files = 0
const write = (text: string) => {
  const file = join(workspace, `shallot-${++files}.yaml`)
  writeFileSync(file, text)
  return file
}

const greet = defineTool({ name: 'greet', description: 'greets', input: z.object({}), effect: 'read', execute: async () => 'hello' })
const wave = defineTool({ name: 'wave', description: 'waves', input: z.object({}), effect: 'read', execute: async () => 'bye' })

async function failure(load: Promise<unknown>): Promise<ConfigError> {
  const err = await load.catch((e: unknown) => e)
  expect(ConfigError.is(err), `expected a ConfigError, got ${String(err)}`).toBe(true)
  return err as ConfigError
}

describe('third-party middlewares by package name', () => {
  it("loads an ESM-only package from the config file's folder and runs it in the stack", async () => {
    const config = await loadConfig(write('stack:\n  - panic-catcher\n  - "@acme/shallot-shout": { suffix: "?!" }\n'))
    const stack = createStackFromConfig(config, { tools: [greet] })
    expect(await stack.dispatch({ id: 'c1', name: 'greet', args: {} })).toMatchObject({ ok: true, value: 'HELLO?!' })
  })

  it("checks the package's options with its own schema, at the right line and path", async () => {
    const err = await failure(loadConfig(write('stack:\n  - panic-catcher\n  - "@acme/shallot-shout":\n      suffix: ""\n')))
    expect(err).toMatchObject({ line: 4, path: 'stack[1]["@acme/shallot-shout"].suffix' })
    expect(err.message).toContain('got ""')
  })

  it('gives a package layer per-tool options too', async () => {
    const config = await loadConfig(
      write('stack:\n  - "@acme/shallot-shout"\ntools:\n  wave:\n    "@acme/shallot-shout": { suffix: "~" }\n'),
    )
    const stack = createStackFromConfig(config, { tools: [greet, wave] })
    expect((await stack.dispatch({ id: 'a', name: 'greet', args: {} })).value).toBe('HELLO!')
    expect((await stack.dispatch({ id: 'b', name: 'wave', args: {} })).value).toBe('BYE~')
  })

  it('loads a CommonJS package whose `definition` export is the middleware', async () => {
    const stack = createStackFromConfig(await loadConfig(write('stack:\n  - shallot-tag: { tag: t1 }\n')), { tools: [greet] })
    expect((await stack.dispatch({ id: 'c', name: 'greet', args: {} })).value).toBe('t1:hello')
  })

  it('resolves package names of a config given as an object from the folder it is told', async () => {
    const config = await loadConfig({ stack: ['@acme/shallot-shout'] }, { dir: workspace })
    expect(config.layers[0]?.definition.name).toBe('@acme/shallot-shout')
  })

  it('names a package that exports no middleware definition', async () => {
    const err = await failure(loadConfig(write('stack:\n  - retry\n  - "@acme/not-a-middleware"\n')))
    expect(err).toMatchObject({ line: 3, path: 'stack[1]' })
    expect(err.message).toContain('package "@acme/not-a-middleware" exports no middleware definition')
  })

  it('names a package that fails to load, with its error', async () => {
    const err = await failure(loadConfig(write('stack:\n  - "@acme/broken"\n')))
    expect(err.message).toContain('package "@acme/broken" failed to load: cannot start: LICENSE_KEY is not set')
  })

  it('names a package that is not installed and says how to fix it', async () => {
    const err = await failure(loadConfig(write('stack:\n  - "@acme/shallot-not-installed"\n')))
    expect(err).toMatchObject({ line: 2, path: 'stack[0]', hint: 'install it (npm install @acme/shallot-not-installed) or fix the name' })
  })
})

describe('resolvePackage', () => {
  // Plain Node's require.resolve refuses an import-only exports map (ERR_PACKAGE_PATH_NOT_EXPORTED); vitest runs
  // with --conditions import, so here the map is read directly by passing a condition of our own.
  it('reads an ESM-only exports map itself, as it must where require.resolve cannot', () => {
    expect(resolvePackage('@acme/shallot-shout', workspace, ['browser'])).toBe(join(modules, '@acme', 'shallot-shout', 'index.js'))
    expect(resolvePackage('@acme/shallot-shout', workspace)).toBe(join(modules, '@acme', 'shallot-shout', 'index.js'))
  })

  it('finds packages installed in a parent folder', () => {
    const nested = join(workspace, 'agents', 'billing')
    mkdirSync(nested, { recursive: true })
    expect(resolvePackage('shallot-tag', nested)).toBe(join(modules, 'shallot-tag', 'main.cjs'))
  })

  it('tries extra conditions first, and lets a package resolve itself by name', () => {
    const self = join(workspace, 'self')
    mkdirSync(join(self, 'src'), { recursive: true })
    writeFileSync(join(self, 'src', 'index.ts'), 'export {}\n')
    writeFileSync(
      join(self, 'package.json'),
      JSON.stringify({ name: '@acme/self', exports: { '.': { source: './src/index.ts', default: './dist/index.js' } } }),
    )
    expect(resolvePackage('@acme/self', self, ['source'])).toBe(join(self, 'src', 'index.ts'))
    expect(() => resolvePackage('@acme/self', self)).toThrow(/does not exist \(is it built\?\)/)
  })
})

describe('a stack entry is a package name, never a file', () => {
  // A definition that leaves a mark when imported: a file of a built-in's name must never be run.
  const PLANTED = `
import { writeFileSync } from 'node:fs'
writeFileSync(new URL('./ran.txt', import.meta.url), 'ran')
export default Object.freeze({ kind: 'shallot.middleware', name: 'planted', description: '', options: undefined, create: () => async (c, n) => n(), build: () => async (c, n) => n() })
`
  it.each(['child_process', 'fs', 'vm', 'os', 'worker_threads'])(
    '%s: refused as a Node built-in, and a file of that name in the working directory is not run',
    async (name) => {
      const cwd = join(workspace, `cwd-${name}`)
      mkdirSync(cwd, { recursive: true })
      writeFileSync(join(cwd, name), PLANTED)
      writeFileSync(join(cwd, 'package.json'), JSON.stringify({ type: 'module' }))
      vi.spyOn(process, 'cwd').mockReturnValue(cwd)
      const err = await failure(loadConfig(write(`stack:\n  - retry\n  - "${name}"\n`)))
      expect(existsSync(join(cwd, 'ran.txt'))).toBe(false)
      expect(err).toMatchObject({ line: 3, path: 'stack[1]', hint: undefined })
      expect(err.message).toContain(`unknown middleware "${name}": "${name}" is a Node built-in module, not a middleware package`)
    },
  )

  it.each([
    ['node:child_process', 'is a Node built-in module'],
    ['child_process', 'is a Node built-in module'],
    ['./local.js', 'is not a package name'],
    ['/abs/path.js', 'is not a package name'],
    ['file:///abs/path.js', 'is not a package name'],
    ['@acme/shallot-shout/index.js', 'is not a package name'],
  ])('loadMiddleware(%j) is refused before anything is resolved or imported', async (name, problem) => {
    const err = await loadMiddleware(name, workspace).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(MiddlewareLoadError)
    expect(err).toMatchObject({ reason: 'not_a_package', message: expect.stringContaining(problem) })
  })

  it('resolvePackage never answers with a bare name: a built-in is not a package on disk', () => {
    expect(() => resolvePackage('fs', workspace)).toThrow('"fs" is not a package on disk')
  })
})
