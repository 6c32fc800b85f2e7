import {
  type Clock,
  isLayer,
  type LayerEntry,
  type Logger,
  type ModelEvent,
  type ModelMiddleware,
  modelSideOf,
  type RunContext,
} from '@shallot/core'
import { defaultModelMiddleware } from 'shallot'
import { z } from 'zod'

const custom = <T>(what: string, check: (v: unknown) => boolean) => z.custom<T>(check, { message: `must be ${what}` })
const isObject = (v: unknown) => typeof v === 'object' && v !== null
const isFunction = (v: unknown) => typeof v === 'function'
const isModelEntry = (v: unknown) => isFunction(v) || (isLayer(v) && isFunction(v.wrapModelCall))

/** What {@link shallotModel} and {@link shallotModelProvider} share: the model layers and what they run on. */
export const modelHostShape = {
  /**
   * The model layers, outermost first: layers with a model side (`retry()`, `circuitBreaker()`, `fallback({ models })`)
   * or model middleware functions, as `createAgent({ modelMiddleware })` takes them. Default: `defaultModelMiddleware()`.
   */
  modelMiddleware: custom<readonly LayerEntry<ModelMiddleware>[]>(
    'an array of layers with a model side (e.g. retry()) or model middleware functions (ctx, next) => Promise<void>',
    (v) => Array.isArray(v) && v.every(isModelEntry),
  ).optional(),
  /** The run the calls belong to (a `shallotFunctionTools()` set's `run`), so per-run layer state is shared. Default: one per call. */
  run: custom<RunContext>('a run from createRun()', (v) => isObject(v) && isObject((v as RunContext).state)).optional(),
  clock: custom<Clock>('a Clock { now(), sleep(ms, signal) }', (v) => isObject(v) && isFunction((v as Clock).sleep)).optional(),
  random: custom<() => number>('a function () => number', isFunction).optional(),
  logger: custom<Logger>('a pino-compatible logger', (v) => isObject(v) && isFunction((v as Logger).warn)).optional(),
  /** Receives `model.retry`, `model.fallback` and `model.circuit`; a throwing listener is logged, never rethrown. */
  onEvent: custom<(event: ModelEvent) => void>('a function (event) => void', isFunction).optional(),
}

/** The layers given, as model middleware functions, or the default model stack. */
export function modelLayersOf(given: readonly LayerEntry<ModelMiddleware>[] | undefined): ModelMiddleware[] {
  if (given === undefined) return defaultModelMiddleware()
  return given.map((entry, i) => modelSideOf(entry, `modelMiddleware[${i}]`))
}

/** The host options of parsed options: only those given, so `exactOptionalPropertyTypes` holds. */
export function hostOptionsOf(o: {
  modelMiddleware?: readonly LayerEntry<ModelMiddleware>[] | undefined
  clock?: Clock | undefined
  random?: (() => number) | undefined
  logger?: Logger | undefined
  onEvent?: ((event: ModelEvent) => void) | undefined
}) {
  return {
    modelMiddleware: modelLayersOf(o.modelMiddleware),
    ...(o.clock === undefined ? {} : { clock: o.clock }),
    ...(o.random === undefined ? {} : { random: o.random }),
    ...(o.logger === undefined ? {} : { log: o.logger }),
    ...(o.onEvent === undefined ? {} : { onEvent: o.onEvent }),
  }
}
