/** The flags of `shallot run` and `shallot resume`. */
export const RUN_FLAGS = {
  model: { type: 'string' },
  config: { type: 'string' },
  mcp: { type: 'string', multiple: true },
  'mcp-env': { type: 'string' },
  'park-after': { type: 'string' },
  checkpoints: { type: 'string' },
  report: { type: 'string' },
  html: { type: 'string' },
  record: { type: 'string' },
  'max-turns': { type: 'string' },
  'max-steps': { type: 'string' },
  'run-id': { type: 'string' },
  stream: { type: 'boolean' },
  approve: { type: 'string', multiple: true },
  deny: { type: 'string', multiple: true },
  edit: { type: 'string', multiple: true },
} as const
