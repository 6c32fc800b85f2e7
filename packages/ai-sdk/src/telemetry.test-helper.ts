import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { ToolError } from '@shallot/core'
import { tool } from 'ai'
import { z } from 'zod'
import type { Reply } from './scripted-language-model.test-helper.js'

/** A real OpenTelemetry SDK tracer that keeps its finished spans in memory. */
export function memoryTracing() {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  return { tracer: provider.getTracer('shallot-test'), spans: (): ReadableSpan[] => exporter.getFinishedSpans() }
}

/** read_file finds only src/main.rs; the script first asks for the mistyped path. */
export function mistypedPath() {
  const readFile = tool({
    description: 'Read a file',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => {
      if (path !== 'src/main.rs') throw new ToolError('not_found', `file ${path} not found`)
      return 'fn main() {}'
    },
  })
  const script: Reply[] = [
    { toolCalls: [{ name: 'read_file', input: { path: 'src/mian.rs' }, id: 'call_bad' }] },
    { toolCalls: [{ name: 'read_file', input: { path: 'src/main.rs' }, id: 'call_good' }] },
    { text: 'done' },
  ]
  return { readFile, script }
}
