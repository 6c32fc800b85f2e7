// Every published package imported by name, so `tsc` with skipLibCheck false reads every .d.ts a consumer
// can reach, and the run proves each entry point loads under plain Node from an npm install.
import * as agent from '@shallot/agent'
import * as aiSdk from '@shallot/ai-sdk'
import * as bulkhead from '@shallot/bulkhead'
import * as bullmq from '@shallot/bullmq'
import * as circuitBreaker from '@shallot/circuit-breaker'
import * as cli from '@shallot/cli'
import * as config from '@shallot/config'
import * as contextEditing from '@shallot/context-editing'
import * as core from '@shallot/core'
import * as coreKit from '@shallot/core/kit'
import * as errorClassifier from '@shallot/error-classifier'
import * as fallback from '@shallot/fallback'
import * as hedging from '@shallot/hedging'
import * as idempotency from '@shallot/idempotency'
import * as idempotencyContract from '@shallot/idempotency/contract'
import * as langchain from '@shallot/langchain'
import * as mcp from '@shallot/mcp'
import * as openaiAgents from '@shallot/openai-agents'
import * as openaiAgentsTesting from '@shallot/openai-agents/testing'
import * as otel from '@shallot/otel'
import * as panicCatcher from '@shallot/panic-catcher'
import * as policy from '@shallot/policy'
import * as rateLimit from '@shallot/rate-limit'
import * as rateLimitContract from '@shallot/rate-limit/contract'
import * as retry from '@shallot/retry'
import * as storePostgres from '@shallot/store-postgres'
import * as storeRedis from '@shallot/store-redis'
import { sqliteStore } from '@shallot/store-sqlite'
import * as stuckLoop from '@shallot/stuck-loop'
import * as testing from '@shallot/testing'
import * as timeout from '@shallot/timeout'
import * as shallot from 'shallot'

const modules = {
  agent,
  aiSdk,
  bulkhead,
  bullmq,
  circuitBreaker,
  cli,
  config,
  contextEditing,
  core,
  coreKit,
  errorClassifier,
  fallback,
  hedging,
  idempotency,
  idempotencyContract,
  langchain,
  mcp,
  openaiAgents,
  openaiAgentsTesting,
  otel,
  panicCatcher,
  policy,
  rateLimit,
  rateLimitContract,
  retry,
  storePostgres,
  storeRedis,
  stuckLoop,
  testing,
  timeout,
  shallot,
}
for (const [name, module] of Object.entries(modules)) if (Object.keys(module).length === 0) throw new Error(`${name} exports nothing`)

// The native store really opens, writes and reads back: better-sqlite3 was built for this Node.
const store = sqliteStore({ path: ':memory:' })
const begun = store.begin('smoke-key', 'args-hash', 60_000, 86_400_000)
if (begun.status !== 'new') throw new Error(`sqliteStore: expected a fresh key, got ${begun.status}`)
store.complete('smoke-key', begun.token, { value: 'done' }, 86_400_000)
const again = store.begin('smoke-key', 'args-hash', 60_000, 86_400_000)
if (again.status !== 'done') throw new Error(`sqliteStore: expected the recorded result, got ${again.status}`)
store.close()
console.log(`every package loaded: ${Object.keys(modules).length + 1} entry points`)
