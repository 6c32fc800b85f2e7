import { type AnyTool, type Clock, createStack, type Stack, systemClock } from '@shallot/core'
import { retry } from '@shallot/retry'
import { fallback } from './index.js'

/** The forecast's mirror answers as well as the forecast: a failure goes to it at once, not after retries. */
export function forecastStack(forecast: AnyTool, mirror: AnyTool, clock: Clock = systemClock): Stack {
  let stack: Stack
  const askTheMirror = fallback({
    tools: { get_forecast: [{ from: 'tool', tool: 'get_forecast_mirror' }] },
    dispatch: (call, options) => stack.dispatch(call, options),
  })
  stack = createStack({ tools: [forecast, mirror], clock, middleware: [retry(), askTheMirror] })
  return stack
}
