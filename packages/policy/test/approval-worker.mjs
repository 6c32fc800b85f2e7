// A worker process for src/agent-resume.processes.test.ts: an agent with a file checkpoint store
// and a SQLite idempotency store, so a SIGKILL can fall between a human's approval and the
// checkpoint of the turn it approved. It runs the BUILT packages (dist); the test builds them first.
// Usage: node approval-worker.mjs '<json config>'  → prints the outcome as one JSON line.
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createAgent, ResumeError } from '@shallot/agent'
import { defineTool } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { policy } from '@shallot/policy'
import { sqliteStore } from '@shallot/store-sqlite'
import { z } from 'zod'

const config = JSON.parse(process.argv[2])
const store = sqliteStore({ path: config.db })
store.database.exec('CREATE TABLE IF NOT EXISTS effects (id INTEGER PRIMARY KEY AUTOINCREMENT, pid INTEGER NOT NULL)')
const recordEffect = store.database.prepare('INSERT INTO effects (pid) VALUES (?)')

const transfer = defineTool({
  name: 'transfer',
  description: 'Move money',
  input: z.object({ to: z.string(), amountCents: z.number() }),
  effect: 'write',
  execute: async ({ to, amountCents }) => {
    recordEffect.run(process.pid) // the side effect: the money moved
    if (config.mode === 'kill-after-effect') process.kill(process.pid, 'SIGKILL')
    if (config.hold) {
      // Held mid-call until the test writes a line: another process tries to resume the run meanwhile.
      process.stdout.write(`${JSON.stringify({ event: 'effect-started' })}\n`)
      await new Promise((resolve) => process.stdin.once('data', resolve))
      process.stdin.pause()
    }
    return `sent ${amountCents} to ${to}`
  },
})

const alive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}
const lock = `${config.checkpoints}.lock`
const takeLock = () => {
  try {
    writeFileSync(lock, String(process.pid), { flag: 'wx' })
    return true
  } catch (err) {
    if (err.code !== 'EEXIST') throw err
    return false
  }
}

// Checkpoints in one JSON file, replaced atomically (write + rename), as a durable store would; a
// lock file created exclusively (O_EXCL) is the claim, and it lapses when its holder's pid is gone.
const checkpoints = {
  claim() {
    if (!takeLock()) {
      const holder = Number(readFileSync(lock, 'utf8'))
      if (Number.isInteger(holder) && holder > 0 && alive(holder)) return undefined
      rmSync(lock, { force: true })
      if (!takeLock()) return undefined
    }
    return () => rmSync(lock, { force: true })
  },
  save(snapshot) {
    writeFileSync(`${config.checkpoints}.tmp`, JSON.stringify(snapshot))
    renameSync(`${config.checkpoints}.tmp`, config.checkpoints)
  },
  load() {
    try {
      return JSON.parse(readFileSync(config.checkpoints, 'utf8'))
    } catch {
      return undefined
    }
  },
}

// The model asks for one big transfer, then says what it read.
const model = {
  async generate({ messages }) {
    const last = messages[messages.length - 1]
    if (last.role === 'tool') return { text: `the model read: ${last.content}` }
    return { toolCalls: [{ id: 'call_9', name: 'transfer', args: { to: 'bob', amountCents: 50_000 } }] }
  },
}

const agent = createAgent({
  model,
  tools: [transfer],
  checkpoints,
  middleware: [
    policy({ rules: [{ action: 'approve', tools: 'transfer', reason: 'transfers need a person' }] }),
    idempotency({ store, leaseMs: config.leaseMs ?? 120_000, waitMs: config.waitMs ?? 10_000, pollMs: 20 }),
  ],
})

let outcome
try {
  outcome =
    config.mode === 'run'
      ? await agent.run({ input: 'pay bob', runId: 'r1' })
      : await agent.resume('r1', config.approvals ? { approvals: config.approvals } : {})
} catch (err) {
  if (!ResumeError.is(err)) throw err
  const { n: effects } = store.database.prepare('SELECT count(*) AS n FROM effects').get()
  process.stdout.write(`${JSON.stringify({ status: 'refused', code: err.code, message: err.message, effects })}\n`)
  store.close?.()
  process.exit(0)
}
const summary =
  outcome.status === 'completed'
    ? { status: 'completed', output: outcome.output }
    : { status: 'stopped', kind: outcome.error.kind, pending: outcome.report.pending.map((p) => p.callId) }
const { n: effects } = store.database.prepare('SELECT count(*) AS n FROM effects').get()
process.stdout.write(`${JSON.stringify({ ...summary, effects })}\n`)
store.close?.()
