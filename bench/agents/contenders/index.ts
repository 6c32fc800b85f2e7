import { aiSdk, aiSdkShallot, aiSdkShallotFull } from './ai-sdk.js'
import type { Contender } from './contender.js'
import { langchain, langchainShallot, langchainShallotFull } from './langchain.js'
import { openaiAgents, openaiAgentsShallot, openaiAgentsShallotFull } from './openai-agents.js'
import { shallotAgent, shallotFull, shallotReconcile } from './shallot-agent.js'

export type { Contender } from './contender.js'

/** Every contender, frameworks first, each followed by itself with shallot in front. */
export const CONTENDERS: readonly Contender[] = [
  aiSdk,
  aiSdkShallot,
  aiSdkShallotFull,
  langchain,
  langchainShallot,
  langchainShallotFull,
  openaiAgents,
  openaiAgentsShallot,
  openaiAgentsShallotFull,
  shallotAgent,
  shallotReconcile,
  shallotFull,
]
