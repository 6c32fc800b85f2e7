// The two rows of the bench's "full write (distinct args) ÷ full read" target, built exactly as
// bench/src/scenarios.ts builds them: the default stack in front of the read tool, and in front of
// the write tool with arguments never seen before (so every write claims a new key and, past
// 10,000, evicts one from the default memory store).
import { defaultMiddleware } from 'shallot'
import { countingTool, distinctCall, readTool, stackOf, writeTool } from '../src/fixtures.js'

export function rows(): { read: () => Promise<unknown>; write: () => Promise<unknown>; writes: () => number } {
  const read = stackOf(defaultMiddleware(), [readTool])
  let writes = 0
  const write = stackOf(defaultMiddleware(), [countingTool(writeTool, () => writes++)])
  return {
    read: () => read.dispatch(distinctCall('lookup')),
    write: () => write.dispatch(distinctCall('record')),
    writes: () => writes,
  }
}
