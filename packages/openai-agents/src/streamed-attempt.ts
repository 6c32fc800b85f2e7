import type { Model, ModelRequest, StreamEvent } from '@openai/agents'
import { abortReason } from '@shallot/core'

/** A stream whose first event arrived: that event, and the rest, still to be read. */
export interface StartedStream {
  readonly first: IteratorResult<StreamEvent>
  readonly rest: AsyncIterator<StreamEvent>
  /** Call once the stream is done with (read to the end, failed, or left by the caller). */
  readonly done: () => void
}

/**
 * One attempt of a streamed model call, which succeeds when the stream's first event arrives: until then a failure
 * is the attempt's, and the layers may repeat it; from then on the stream belongs to the caller. The model's request
 * follows `attemptSignal` (a layer's deadline, the caller's cancel) until the first event, then only `callerSignal`:
 * the deadline bounds the wait for the stream to start, and the layers' attempt, once settled, no longer cuts it.
 */
export async function startStream(
  model: Model,
  request: ModelRequest,
  attemptSignal: AbortSignal,
  callerSignal: AbortSignal | undefined,
): Promise<StartedStream> {
  const own = new AbortController()
  const follow = (signal: AbortSignal) => {
    const onAbort = () => own.abort(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    return () => signal.removeEventListener('abort', onAbort)
  }
  let unfollow = follow(attemptSignal)
  const rest = model.getStreamedResponse({ ...request, signal: own.signal })[Symbol.asyncIterator]()
  let first: IteratorResult<StreamEvent>
  try {
    first = await rest.next()
  } finally {
    unfollow()
  }
  // The layers gave up on this attempt while the model was slow to start (it ignored the abort): its stream is dropped.
  if (attemptSignal.aborted) {
    own.abort(attemptSignal.reason)
    void Promise.resolve(rest.return?.()).catch(() => {})
    throw abortReason(attemptSignal)
  }
  unfollow = callerSignal === undefined ? () => {} : follow(callerSignal)
  return { first, rest, done: () => unfollow() }
}
