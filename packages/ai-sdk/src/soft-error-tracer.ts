import type { Span, SpanStatus, Tracer } from '@opentelemetry/api'
import type { SoftFailure } from './soft-failure.js'

// ai 6 and ai 7's LegacyOpenTelemetry name the call `ai.toolCall.id`; ai 7's OpenTelemetry uses the semantic convention.
const CALL_ID_KEYS = ['ai.toolCall.id', 'gen_ai.tool.call.id'] as const
const ERROR = 2 // SpanStatusCode.ERROR, a type-only import keeps @opentelemetry/api optional

function callIdOf(options: unknown): string | undefined {
  const attributes = (options as { attributes?: Record<string, unknown> } | undefined)?.attributes
  if (attributes === undefined) return undefined
  for (const key of CALL_ID_KEYS) {
    const id = attributes[key]
    if (typeof id === 'string') return id
  }
  return undefined
}

/** The span of one tool call: when the call ended in a soft error, its status is ERROR, whatever the SDK sets. */
function softAware(span: Span, callId: string, softFailures: Map<string, SoftFailure>): Span {
  const failure = () => softFailures.get(callId)
  return new Proxy(span, {
    get(target, key) {
      if (key === 'setStatus') {
        return (status: SpanStatus) => (failure() === undefined ? target.setStatus(status) : target)
      }
      if (key === 'end') {
        return (endTime?: Parameters<Span['end']>[0]) => {
          const soft = failure()
          if (soft !== undefined) {
            softFailures.delete(callId)
            target.setAttributes({ 'shallot.error.code': soft.error.code, 'shallot.error.category': soft.error.category })
            target.setStatus({ code: ERROR, message: `${soft.error.code}: ${soft.error.message}` })
          }
          target.end(endTime)
        }
      }
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/**
 * Wraps an OpenTelemetry tracer so the SDK's tool-call spans (`ai.toolCall`, `execute_tool …`) of
 * calls that ended in a shallot soft error end with status ERROR and `shallot.error.code` /
 * `shallot.error.category` attributes. The model still reads the soft error as a tool result.
 */
export function softErrorTracer(tracer: Tracer, softFailures: Map<string, SoftFailure>): Tracer {
  const wrapSpan = (span: Span, options: unknown) => {
    const id = callIdOf(options)
    return id === undefined ? span : softAware(span, id, softFailures)
  }
  return {
    startSpan(name, options, context) {
      return wrapSpan(tracer.startSpan(name, options, context), options)
    },
    startActiveSpan(name: string, ...rest: unknown[]) {
      const fn = rest.pop() as (span: Span) => unknown
      const options = rest[0]
      return (tracer.startActiveSpan as (...args: unknown[]) => unknown)(name, ...rest, (span: Span) => fn(wrapSpan(span, options)))
    },
  } as Tracer
}
