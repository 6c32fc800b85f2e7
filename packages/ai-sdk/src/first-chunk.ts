import { abortReason } from '@shallot/core'
import type { StreamPart, StreamResult } from './sdk-model-types.js'

/** What a provider sends before any output: warnings, response metadata, raw chunks, keep-alives. */
const PREAMBLE = new Set(['stream-start', 'response-metadata', 'raw', 'ping'])

const noop = () => {}

/** Aborts `controller` when `signal` does; returns the function that stops following it. */
function follow(signal: AbortSignal | undefined, controller: AbortController): () => void {
  if (signal === undefined) return noop
  if (signal.aborted) {
    controller.abort(signal.reason)
    return noop
  }
  const onAbort = () => controller.abort(signal.reason)
  signal.addEventListener('abort', onAbort, { once: true })
  return () => signal.removeEventListener('abort', onAbort)
}

export interface FirstChunkOptions {
  /** Opens the stream with the request's signal, which lives as long as the stream. */
  readonly open: (signal: AbortSignal) => PromiseLike<StreamResult>
  /** The attempt's deadline and cancellation: followed until the first chunk, then let go. */
  readonly attempt: AbortSignal
  /** The caller's cancellation (the SDK's `abortSignal`): followed for the stream's whole life. */
  readonly caller: AbortSignal | undefined
  /** Sees the stream's `finish` part (its usage), once it passes. */
  readonly onFinish: (part: StreamPart) => void
}

/**
 * One streaming attempt, settled at the first chunk of output: until it arrives, a failure (the request, a read,
 * an `error` part) is thrown, so the layers may repeat the attempt; once it arrived, the stream is the caller's, the
 * chunks read so far first, and nothing after it is repeated: what the caller has seen cannot be taken back.
 */
export async function untilFirstChunk(options: FirstChunkOptions): Promise<StreamResult> {
  const { attempt } = options
  if (attempt.aborted) throw abortReason(attempt)
  const request = new AbortController()
  const leaveAttempt = follow(attempt, request)
  const leaveCaller = follow(options.caller, request)
  let reader: ReadableStreamDefaultReader<StreamPart> | undefined
  try {
    const result = await options.open(request.signal)
    reader = result.stream.getReader()
    const head: StreamPart[] = []
    let done = false
    for (;;) {
      const read = await reader.read()
      if (read.done) {
        done = true
        break
      }
      if (read.value.type === 'error') throw (read.value as { error: unknown }).error
      head.push(read.value)
      if (!PREAMBLE.has(read.value.type)) break
    }
    // The attempt ended (a deadline) while the head was read: nobody takes this stream.
    if (attempt.aborted) throw abortReason(attempt)
    return { ...result, stream: replay({ head, reader, done, request, leaveCaller, onFinish: options.onFinish }) }
  } catch (error) {
    leaveCaller()
    request.abort(error)
    reader?.cancel(error).catch(noop)
    throw error
  } finally {
    leaveAttempt()
  }
}

interface Replay {
  readonly head: StreamPart[]
  readonly reader: ReadableStreamDefaultReader<StreamPart>
  readonly done: boolean
  readonly request: AbortController
  readonly leaveCaller: () => void
  readonly onFinish: (part: StreamPart) => void
}

/** The stream the caller reads: the head, then the rest as it comes; cancelling it ends the request. */
function replay({ head, reader, done, request, leaveCaller, onFinish }: Replay): ReadableStream<StreamPart> {
  const see = (part: StreamPart) => {
    if (part.type === 'finish') onFinish(part)
    return part
  }
  return new ReadableStream<StreamPart>({
    start(controller) {
      for (const part of head) controller.enqueue(see(part))
      if (done) {
        leaveCaller()
        controller.close()
      }
    },
    async pull(controller) {
      try {
        const read = await reader.read()
        if (read.done) {
          leaveCaller()
          controller.close()
        } else controller.enqueue(see(read.value))
      } catch (error) {
        leaveCaller()
        controller.error(error)
      }
    },
    async cancel(reason) {
      leaveCaller()
      request.abort(reason)
      await reader.cancel(reason).catch(noop)
    },
  })
}
