// The soak lives outside the workspace's packages, so Node would not find what it imports. Loaded
// with `node --import`, this file registers itself as a module resolver: `@shallot/<name>` is the
// built package in packages/<name>, and any other bare name resolves as it does for @shallot/bullmq's
// own tests (bullmq, pg, zod).
import { register } from 'node:module'
import { isMainThread } from 'node:worker_threads'

// dist/bench/chaos/resolve-hook.js → the repository root.
const root = new URL('../../../../../', import.meta.url)
const beside = new URL('packages/bullmq/package.json', root).href

type Next = (specifier: string, context: { parentURL?: string | undefined }) => Promise<unknown>

export async function resolve(specifier: string, context: { parentURL?: string | undefined }, next: Next): Promise<unknown> {
  const ours = /^@shallot\/([a-z0-9-]+)$/.exec(specifier)
  if (ours !== null) return next(new URL(`packages/${ours[1]}/dist/index.js`, root).href, context)
  try {
    return await next(specifier, context)
  } catch (err) {
    if (/^[@a-z]/.test(specifier) && !specifier.startsWith('node:')) return next(specifier, { ...context, parentURL: beside })
    throw err
  }
}

if (isMainThread) register(import.meta.url)
