export { type AgentQueue, type AgentQueueOptions, agentQueue } from './agent-queue.js'
export { type AgentWorker, type AgentWorkerOptions, agentWorker } from './agent-worker.js'
export { type RunJob, type RunJobResult, runJobSchema } from './run-job.js'
