import type { ConfigIssue } from './config-error.js'

/**
 * How deep a config may nest, counting every object and list. Real configs stay under ten; the cap
 * keeps every later step (the YAML composer, zod, the options schemas) far from the stack limit.
 */
export const MAX_DEPTH = 64

/** The largest config file read by default: 1 MiB. `loadConfig(file, { maxBytes })` changes it. */
export const DEFAULT_MAX_BYTES = 1024 * 1024

/** The most values that YAML aliases may add to a document: past it, the file is an alias bomb. */
export const MAX_ALIAS_NODES = 100_000

/** An issue with no place in the document (the file as a whole). */
export function fileIssue(message: string, line?: number, hint?: string): ConfigIssue {
  return {
    path: '',
    line,
    message: hint === undefined ? message : `${message}; ${hint}`,
    received: undefined,
    allowed: undefined,
    hint,
  }
}

/** The issue for a document nested past {@link MAX_DEPTH}. */
export function tooDeep(line?: number): ConfigIssue {
  return fileIssue(`nested more than ${MAX_DEPTH} levels deep`, line, 'a config is a few levels of objects and lists')
}

/** `1048576` → `1 MiB`, `2500` → `2500 bytes`. */
export function bytesText(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`
}
