import { writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { UsageError } from '../usage.js'
import { renderHtml } from './html.js'
import { RecordError, type RunRecord, readRecord } from './record.js'

/** `--record FILE` writes the record as JSON, `--html FILE` the timeline page; both name the file on failure. */
export async function writeRunFiles(
  record: RunRecord,
  files: { record?: string; html?: string },
  out: (line: string) => void,
): Promise<void> {
  if (files.record !== undefined) {
    await writeOut(files.record, `${JSON.stringify(record, null, 1)}\n`)
    out(`wrote the run record to ${files.record}`)
  }
  if (files.html !== undefined) {
    await writeOut(files.html, renderHtml(record))
    out(`wrote the timeline to ${files.html}`)
  }
}

/** Writes a file the user named; a failure is a `UsageError` naming the file. */
export async function writeOut(file: string, text: string): Promise<void> {
  try {
    await writeFile(file, text)
  } catch (err) {
    throw new UsageError(`cannot write ${file}: ${(err as { code?: string }).code ?? (err instanceof Error ? err.message : String(err))}`)
  }
}

/** `shallot report run.json -o run.html`: a bad record is a usage error naming the file, exit code 2. */
export async function runReport(args: readonly string[], out: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: { output: { type: 'string', short: 'o' } },
    strict: true,
    allowPositionals: true,
  })
  if (positionals.length !== 1) throw new UsageError('report takes one run record: shallot report run.json -o run.html')
  if (values.output === undefined) throw new UsageError('report needs an output file: shallot report run.json -o run.html')
  let record: RunRecord
  try {
    record = await readRecord(positionals[0] as string)
  } catch (err) {
    if (err instanceof RecordError) throw new UsageError(err.message)
    throw err
  }
  await writeRunFiles(record, { html: values.output }, out)
  return 0
}
