import type { Logger } from '@shallot/core'

/** A logger that keeps its warnings (message and fields), for tests that check what a store reported. */
export function spyLogger(): Logger & { warnings: Array<{ msg: string; fields: Record<string, unknown> }> } {
  const warnings: Array<{ msg: string; fields: Record<string, unknown> }> = []
  const logger = {
    warnings,
    debug: () => {},
    info: () => {},
    warn: (fields: object, msg?: string) => void warnings.push({ msg: msg ?? '', fields: fields as Record<string, unknown> }),
    error: () => {},
    child: () => logger,
  }
  return logger
}
