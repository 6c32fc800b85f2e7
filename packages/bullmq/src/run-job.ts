import { z } from 'zod'

/**
 * What a run's job carries: the run id (the job id too, so one run is one job) and the task.
 *
 * @example
 * runJobSchema.parse({ runId: 'order-42', input: 'Refund order 42' })
 */
export const runJobSchema = z.strictObject({
  runId: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,128}$/, 'must be 1–128 letters, digits, "_", "-" or "." (it is the BullMQ job id)')
    .refine((id) => !/^\d+$/.test(id), 'must not be all digits: BullMQ reserves integer job ids for its own'),
  input: z.string().max(1_000_000, 'must be at most 1,000,000 characters'),
})

export type RunJob = z.infer<typeof runJobSchema>

/** What a finished run's job returns: small and JSON, so Redis does not keep a whole transcript per job. */
export type RunJobResult =
  | { readonly status: 'completed'; readonly runId: string; readonly output: string; readonly turns: number; readonly steps: number }
  | { readonly status: 'stopped'; readonly runId: string; readonly kind: string | null; readonly message: string; readonly turns: number }
