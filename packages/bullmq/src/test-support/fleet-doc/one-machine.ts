import { createAgent } from '@shallot/agent'
import type { AnyTool, ModelAdapter } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { retry } from '@shallot/retry'
import { sqliteCheckpoints, sqliteStore } from '@shallot/store-sqlite'

/** One process, one file: records and checkpoints survive a restart; a run waiting 5 s or more parks. */
export function laptopAgent(model: ModelAdapter, tools: AnyTool[], path: string) {
  return createAgent({
    model,
    tools,
    middleware: [idempotency({ store: sqliteStore({ path }) }), retry({ capMs: 2000 })],
    checkpoints: sqliteCheckpoints({ path }),
    park: { afterMs: 5000 },
  })
}
