import { createHmac, timingSafeEqual } from 'node:crypto'
import { canonicalJson } from '@shallot/core/kit'
import { ResumeError, type RunSnapshot } from './checkpoints.js'

const ALGORITHM = 'hmac-sha256:'
// Binds the digest to what it is of, so a key shared with another use cannot be made to vouch for a checkpoint.
const CONTEXT = 'shallot.checkpoint.v1\n'

/** The shortest `checkpointKey`: 256 bits, the size of the HMAC-SHA-256 digest. */
export const MIN_CHECKPOINT_KEY_BYTES = 32

/**
 * Writes and checks the integrity digest of checkpoints with the agent's `checkpointKey`: an
 * HMAC-SHA-256 over the snapshot's canonical JSON (keys sorted, so a store that reorders them
 * changes nothing), the digest itself left out.
 */
export interface CheckpointSeal {
  /** A plain-JSON copy of `snapshot` carrying the digest of what it holds. */
  seal(snapshot: RunSnapshot): RunSnapshot
  /** Throws `ResumeError('corrupt_checkpoint')` unless `snapshot` carries this key's digest of itself, for run `runId`. */
  verify(snapshot: RunSnapshot, runId: string): void
}

/** Accepts a string (its UTF-8 bytes) or bytes of at least {@link MIN_CHECKPOINT_KEY_BYTES}. */
export function checkpointKeyBytes(key: unknown): Uint8Array | undefined {
  const bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : key instanceof Uint8Array ? Uint8Array.from(key) : undefined
  return bytes !== undefined && bytes.length >= MIN_CHECKPOINT_KEY_BYTES ? bytes : undefined
}

/**
 * The seal of checkpoints under `key` (checked by {@link checkpointKeyBytes}).
 *
 * @example
 * const seal = checkpointSeal(checkpointKeyBytes(process.env.CHECKPOINT_KEY) as Uint8Array)
 * seal.verify(seal.seal(snapshot), snapshot.runId) // passes
 */
export function checkpointSeal(key: Uint8Array): CheckpointSeal {
  const digestOf = (snapshot: RunSnapshot): Buffer => {
    const { integrity: _ignored, ...content } = snapshot
    return createHmac('sha256', key).update(CONTEXT).update(canonicalJson(content)).digest()
  }
  return {
    seal(snapshot) {
      const plain = JSON.parse(JSON.stringify(snapshot)) as RunSnapshot & { integrity?: string }
      delete plain.integrity
      return { ...plain, integrity: `${ALGORITHM}${digestOf(plain).toString('hex')}` }
    },
    verify(snapshot, runId) {
      const problem = sealProblem(snapshot, runId, digestOf)
      if (problem === undefined) return
      throw new ResumeError(
        'corrupt_checkpoint',
        runId,
        `agent.resume(): the checkpoint of run "${runId}" cannot be resumed: ${problem}. Nothing ran. ` +
          'Something other than this agent wrote or changed it (or it was saved under another checkpointKey): ' +
          'inspect what the run already did, then restore the checkpoint from a backup or start the run again',
      )
    },
  }
}

function sealProblem(snapshot: RunSnapshot, runId: string, digestOf: (snapshot: RunSnapshot) => Buffer): string | undefined {
  const { integrity } = snapshot as { integrity?: unknown }
  if (integrity === undefined) return 'it carries no integrity digest, and this agent has a checkpointKey'
  if (typeof integrity !== 'string' || !integrity.startsWith(ALGORITHM)) return 'its integrity digest is not "hmac-sha256:<hex>"'
  const given = Buffer.from(integrity.slice(ALGORITHM.length), 'hex')
  let expected: Buffer
  try {
    expected = digestOf(snapshot)
  } catch {
    // A store's own object (a throwing getter, a revoked Proxy) is not a checkpoint anybody sealed.
    return 'its contents cannot be read as plain JSON'
  }
  // Another run's checkpoint saved under this id is sealed over its own run id, so it fails here too.
  if (snapshot.runId !== runId || given.length !== expected.length || !timingSafeEqual(given, expected))
    return 'its integrity digest does not match its contents'
  return undefined
}
