import { generateText, type LanguageModel, stepCountIs, tool } from 'ai'
import { defaultMiddleware } from 'shallot'
import { z } from 'zod'
import { idempotencyKeyOf, shallotModel, shallotTools } from './index.js'

export interface Payments {
  refund(payment: string, options: { idempotencyKey: string | undefined; signal: AbortSignal | undefined }): Promise<string>
  /** The refund a key asked for, if the service took it. */
  findRefund(idempotencyKey: string | undefined): Promise<string | undefined>
}

export function refunds(llm: LanguageModel, payments: Payments) {
  // Once per process: retry (Retry-After as a floor), a breaker per model and a deadline in front of every model call.
  const model = shallotModel(llm)
  return async function refund(payment: string): Promise<string> {
    const refundTool = tool({
      description: 'Refund a payment',
      inputSchema: z.object({ payment: z.string() }),
      // The call's key, the same on every attempt: the service takes the refund once.
      execute: ({ payment }, options) =>
        payments.refund(payment, { idempotencyKey: idempotencyKeyOf(options), signal: options.abortSignal }),
    })
    const shallot = shallotTools(
      { refund: refundTool },
      {
        model: llm,
        middleware: defaultMiddleware(),
        effects: { refund: 'idempotent' },
        // Asked when an attempt's outcome is unknown (it timed out after the request left): did it land?
        reconcile: {
          refund: async (_args, { idempotencyKey }) => {
            const found = await payments.findRefund(idempotencyKey)
            return found === undefined ? { status: 'not_applied' } : { status: 'applied', result: found }
          },
        },
        task: `Refund payment ${payment}`,
      },
    )
    try {
      const { text } = await generateText({
        model,
        prompt: `Refund payment ${payment}`,
        tools: shallot.tools,
        abortSignal: shallot.abortSignal,
        stopWhen: [stepCountIs(10), shallot.stopOnHardError],
      })
      return text
    } catch (error) {
      // A stop (a model that stays down, a loop, a tool that needs a person) reads as createAgent's report.
      const report = shallot.report(error)
      if (report === undefined) throw error
      return report.text
    }
  }
}
