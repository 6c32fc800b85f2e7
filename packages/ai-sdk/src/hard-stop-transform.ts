import { LoopError } from '@shallot/core'
import type { StreamTextTransform, TextStreamPart, ToolSet } from 'ai'

type Part = TextStreamPart<ToolSet>

/** A hard stop is any `LoopError` but cancellation: cancelling is the caller's stop and stays an `abort` part. */
function hardStopIn(part: Part): LoopError | undefined {
  const candidate: unknown =
    part.type === 'tool-error' ? part.error : part.type === 'abort' ? (part as { reason?: unknown }).reason : undefined
  return LoopError.is(candidate) && candidate.kind !== 'cancelled' ? candidate : undefined
}

/**
 * The `experimental_transform` of `streamText` that turns a shallot hard stop into a stream error:
 * after the `tool-error` part that carries the `LoopError` it adds an `error` part with it (so
 * `onError` runs and the UI message stream sends `error`, not `abort`), and it ends the stream with
 * that error, so `text`, `steps` and the stream's iterator reject with the `LoopError` itself.
 * `hardStop` reads the `LoopError` of the set when the stream's abort part only carries its message.
 */
export function hardStopTransform(hardStop: () => LoopError | undefined): StreamTextTransform<ToolSet> {
  return () => {
    let stopped: LoopError | undefined
    return new TransformStream<Part, Part>({
      transform(part, controller) {
        const hard = hardStopIn(part) ?? (part.type === 'abort' ? stoppedBy(hardStop()) : undefined)
        if (hard === undefined) {
          controller.enqueue(part)
          return
        }
        // Siblings of the stopping call fail with the same LoopError: one error part is enough.
        if (part.type === 'tool-error') controller.enqueue(part)
        if (stopped !== undefined) return
        stopped = hard
        controller.enqueue({ type: 'error', error: hard })
      },
      flush() {
        if (stopped !== undefined) throw stopped
      },
    })
  }
}

function stoppedBy(error: LoopError | undefined): LoopError | undefined {
  return error !== undefined && error.kind !== 'cancelled' ? error : undefined
}
