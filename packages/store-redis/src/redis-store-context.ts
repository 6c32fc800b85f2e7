import type { Clock, Logger } from '@shallot/core'
import type { BoundedCall } from '@shallot/core/kit'
import type { RedisCommands } from './redis-commands.js'
import type { RedisKeys } from './redis-keys.js'

/** What the three Redis stores of one `redisStores()` call share. */
export interface RedisStoreContext {
  readonly commands: RedisCommands
  readonly keys: RedisKeys
  readonly bounded: BoundedCall
  /** The stacks' clock. */
  readonly clock: Clock
  readonly log: Logger
  /** The scripts' ARGV[1]: `''` for Redis's TIME, or a test clock's time. */
  nowArg(): string
}
