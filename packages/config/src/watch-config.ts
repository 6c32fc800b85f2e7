import { type FSWatcher, readFileSync, watch } from 'node:fs'
import { basename, dirname, resolve } from 'node:path'
import { ConfigError } from './config-error.js'
import { checkMaxBytes, parseSource } from './config-source.js'
import type { ConfigStack } from './create-stack-from-config.js'
import { configFromSource, type LoadConfigOptions, readConfigText, type ShallotConfig } from './load-config.js'

export interface WatchConfigOptions extends LoadConfigOptions {
  /** Called after a changed file was applied. */
  onReload?: (config: ShallotConfig) => void
  /** Called when a changed file was rejected (the previous configuration stays), or watching failed. */
  onError?: (error: unknown) => void
  /** Quiet time after the last change before the file is read again. Default 100 ms. */
  debounceMs?: number
  /** Whether watching keeps the process alive until the returned function is called, as `fs.watch` does. Default true. */
  persistent?: boolean
}

const missing = (err: unknown) =>
  (err as { code?: unknown }).code === 'ENOENT' || (ConfigError.is(err) && (err.cause as { code?: unknown } | undefined)?.code === 'ENOENT')

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
}

/**
 * Reapplies a config file to a running stack whenever the file changes. Changes are debounced; an
 * unchanged text is ignored; a file that fails to load or build is rejected, logged and reported to
 * `onError`, and the stack keeps its configuration. Watches the file's folder, so editors that save
 * by renaming a new file over the old one are seen. Returns the function that stops watching.
 *
 * @example
 * const stop = watchConfig('shallot.yaml', stack, { onReload: () => log.info('config reloaded') })
 * // later
 * stop()
 */
export function watchConfig(path: string, stack: ConfigStack, options: WatchConfigOptions = {}): () => void {
  const file = resolve(path)
  const name = basename(file)
  const { onReload, onError, debounceMs = 100, persistent = true, ...loadOptions } = options
  const maxBytes = checkMaxBytes(loadOptions.maxBytes)
  let lastText = stack.config.file === file ? readText(file) : undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  let running = false
  let again = false
  let closed = false

  function report(error: unknown): void {
    const fields = ConfigError.is(error) ? { file, issues: error.issues } : { file, err: error }
    stack.logger.error(fields, 'config change rejected; keeping the current configuration')
    try {
      onError?.(error)
    } catch (err) {
      stack.logger.error({ err }, 'watchConfig onError threw')
    }
  }

  async function reload(): Promise<void> {
    timer = undefined
    if (running) {
      again = true
      return
    }
    running = true
    try {
      const text = await readConfigText(file, maxBytes)
      if (closed || text === lastText) return
      const config = await configFromSource(parseSource(text, file, { maxBytes }), loadOptions)
      if (closed) return
      stack.reconfigure(config)
      lastText = text
      onReload?.(config)
    } catch (err) {
      // A file caught mid-rename is briefly missing; the next event brings it back.
      if (!closed && !missing(err)) report(err)
    } finally {
      running = false
      if (again && !closed) {
        again = false
        schedule()
      }
    }
  }

  function schedule(): void {
    if (closed) return
    if (timer !== undefined) clearTimeout(timer)
    timer = setTimeout(() => void reload(), debounceMs)
    if (!persistent) timer.unref?.()
  }

  let watcher: FSWatcher
  try {
    watcher = watch(dirname(file), { persistent }, (_event, changed) => {
      if (changed === null || changed === name) schedule()
    })
  } catch (err) {
    throw new ConfigError(file, [
      {
        path: '',
        line: undefined,
        message: `cannot watch the config file: ${(err as Error).message}`,
        received: undefined,
        allowed: undefined,
        hint: undefined,
      },
    ])
  }
  watcher.on('error', report)

  return function stopWatching(): void {
    closed = true
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    watcher.close()
  }
}
