import type { Logger } from '@shallot/core'

type Entry = { msg: string; fields: Record<string, unknown> }

/** A logger that keeps its infos and warnings (message and fields), for tests that check what a store reported. */
export function spyLogger(): Logger & { infos: Entry[]; warnings: Entry[] } {
  const infos: Entry[] = []
  const warnings: Entry[] = []
  const logger = {
    infos,
    warnings,
    debug: () => {},
    info: (fields: object, msg?: string) => void infos.push({ msg: msg ?? '', fields: fields as Record<string, unknown> }),
    warn: (fields: object, msg?: string) => void warnings.push({ msg: msg ?? '', fields: fields as Record<string, unknown> }),
    error: () => {},
    child: () => logger,
  }
  return logger
}
