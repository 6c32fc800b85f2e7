import { aiSdk, aiSdkShallot, aiSdkShallotFull } from './ai-sdk.js'
import type { Contender } from './contender.js'
import { langchain, langchainShallot } from './langchain.js'
import { openaiAgents, openaiAgentsShallot } from './openai-agents.js'
import { shallotAgent, shallotFull, shallotReconcile } from './shallot-agent.js'

export type { Contender } from './contender.js'

/** Every contender, frameworks first, each followed by itself with shallot in front. */
export const CONTENDERS: readonly Contender[] = [
  aiSdk,
  aiSdkShallot,
  aiSdkShallotFull,
  langchain,
  langchainShallot,
  openaiAgents,
  openaiAgentsShallot,
  shallotAgent,
  shallotReconcile,
  shallotFull,
]
