import { type AnyTool, createStack } from '@shallot/core'
import { policy } from './index.js'

export function guardedStack(tools: readonly AnyTool[]) {
  return createStack({
    tools,
    middleware: [
      policy({
        rules: [
          { action: 'allow', tools: 'read_file', args: [{ arg: 'path', under: '/srv/data' }] },
          { action: 'deny', tools: ['read_file', 'delete_*'], reason: 'only reads under /srv/data' },
          { id: 'writes', action: 'deny', effect: 'write', maxPerRun: 5, reason: 'at most 5 writes per run' },
          { action: 'approve', tools: 'transfer', args: [{ arg: 'amountCents', gt: 10_000 }], reason: 'over $100 needs a person' },
        ],
      }),
    ],
  })
}
