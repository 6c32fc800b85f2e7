/** One answer typed at the prompt: a line, a line too long to keep, or the end of the input. */
export type ReadLine = { readonly line: string } | { readonly tooLong: number } | { readonly end: true }

export interface LineReader {
  /** The next line (without its newline). Never rejects: a stream error reads as the end. */
  next(): Promise<ReadLine>
  /** Stops reading: listeners removed, the stream paused, so a terminal's stdin no longer keeps the process alive. */
  close(): void
}

/**
 * Lines from a stream, at most `maxChars` each: a longer line is dropped as it arrives (only its
 * length is kept), so a pasted megabyte never sits in memory.
 *
 * @example
 * const reader = lineReader(process.stdin, 100_000)
 * const answer = await reader.next()
 */
export function lineReader(input: NodeJS.ReadableStream, maxChars: number): LineReader {
  const lines: ReadLine[] = []
  const waiting: Array<(line: ReadLine) => void> = []
  let buffer = ''
  let dropped = 0
  let ended = false
  const push = (line: ReadLine) => {
    const take = waiting.shift()
    if (take === undefined) lines.push(line)
    else take(line)
  }
  const onData = (chunk: Buffer | string) => {
    let text = typeof chunk === 'string' ? chunk : chunk.toString('utf8')
    for (let newline = text.indexOf('\n'); newline !== -1; newline = text.indexOf('\n')) {
      const piece = text.slice(0, newline)
      text = text.slice(newline + 1)
      if (dropped > 0 || buffer.length + piece.length > maxChars) push({ tooLong: dropped + buffer.length + piece.length })
      else push({ line: (buffer + piece).replace(/\r$/, '') })
      buffer = ''
      dropped = 0
    }
    if (dropped > 0 || buffer.length + text.length > maxChars) {
      dropped += buffer.length + text.length
      buffer = ''
    } else {
      buffer += text
    }
  }
  const onEnd = () => {
    if (ended) return
    ended = true
    // A line the end cut before its newline is not an answer: a half-typed "y" must not approve a write.
    buffer = ''
    for (const take of waiting.splice(0)) take({ end: true })
  }
  input.on('data', onData)
  input.on('end', onEnd)
  input.on('close', onEnd)
  input.on('error', onEnd)
  return {
    next() {
      const line = lines.shift()
      if (line !== undefined) return Promise.resolve(line)
      if (ended) return Promise.resolve({ end: true })
      return new Promise((resolve) => waiting.push(resolve))
    },
    close() {
      input.removeListener('data', onData)
      input.removeListener('end', onEnd)
      input.removeListener('close', onEnd)
      input.removeListener('error', onEnd)
      input.pause()
      for (const take of waiting.splice(0)) take({ end: true })
    },
  }
}
