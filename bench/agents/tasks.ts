/**
 * The agent tasks: a few steps each, reads and non-idempotent writes, one with an alternative read
 * path. A task is a plan the brain follows and the tools it calls; the tools are built per episode
 * on that episode's world.
 */
import { z } from 'zod'
import type { ScheduleTools } from './faults.js'
import type { Effect, ToolOptions, World } from './world.js'

/** A framework-neutral tool; each contender adapts it to its framework's tool format. */
export interface BenchTool {
  readonly name: string
  readonly description: string
  readonly input: z.ZodObject
  readonly effect: Effect
  execute(args: Record<string, unknown>, options: ToolOptions): Promise<unknown>
  /** For a write: the service's lookup by idempotency key (its read endpoint); `undefined` when nothing landed. */
  lookup?(options: ToolOptions): Promise<unknown>
  /**
   * For a write: the service's list endpoint, searched by what the write carried (these arguments,
   * created at or after `since`, wall-clock ms); the newest such write's answer, or `undefined`.
   */
  search?(args: Record<string, unknown>, since: number, options: ToolOptions): Promise<unknown>
}

/** One step of a plan: the tools that can do it (the first is the usual one) and the arguments. */
export interface PlanStep {
  readonly tools: readonly string[]
  readonly args: Record<string, unknown>
}

export interface Task {
  readonly id: string
  readonly prompt: string
  readonly plan: readonly PlanStep[]
  readonly faultTargets: ScheduleTools
  tools(world: World): BenchTool[]
}

interface ToolSpec {
  name: string
  description: string
  input: z.ZodObject
  effect: Effect
  answer: (args: Record<string, unknown>) => unknown
}

const SPECS: Record<string, ToolSpec> = {
  get_order: {
    name: 'get_order',
    description: 'Read an order: its items, amount and payment.',
    input: z.object({ order: z.string() }),
    effect: 'read',
    answer: ({ order }) => ({ order, amountCents: 4200, payment: 'pi_3Q0042', status: 'delivered' }),
  },
  refund_payment: {
    name: 'refund_payment',
    description: 'Refund a payment, in full or in part. Moves money: do it once.',
    input: z.object({ payment: z.string(), amountCents: z.number().int() }),
    effect: 'write',
    answer: ({ payment, amountCents }) => ({ refund: `re_${String(payment).slice(3)}`, amountCents, status: 'succeeded' }),
  },
  lookup_customer: {
    name: 'lookup_customer',
    description: 'Find a customer by email address.',
    input: z.object({ email: z.string() }),
    effect: 'read',
    answer: ({ email }) => ({ customer: 'cus_881', email, plan: 'pro' }),
  },
  send_email: {
    name: 'send_email',
    description: 'Send an email to a customer. The customer receives every email sent.',
    input: z.object({ to: z.string(), subject: z.string() }),
    effect: 'write',
    answer: ({ to }) => ({ message: 'msg_5521', to, status: 'queued' }),
  },
  search_logs: {
    name: 'search_logs',
    description: 'Search the logs of a service for recent problems.',
    input: z.object({ service: z.string() }),
    effect: 'read',
    answer: ({ service }) => ({ service, matches: 3, first: '502 from upstream at 09:14' }),
  },
  create_ticket: {
    name: 'create_ticket',
    description: 'Open a ticket in the issue tracker.',
    input: z.object({ title: z.string() }),
    effect: 'write',
    answer: ({ title }) => ({ ticket: 'OPS-1207', title, status: 'open' }),
  },
  get_forecast: {
    name: 'get_forecast',
    description: 'The weather forecast for a city, from the primary weather service.',
    input: z.object({ city: z.string() }),
    effect: 'read',
    answer: ({ city }) => ({ city, tomorrow: 'rain', highC: 14 }),
  },
  get_forecast_mirror: {
    name: 'get_forecast_mirror',
    description: 'The same forecast from the secondary weather service (a mirror of the primary).',
    input: z.object({ city: z.string() }),
    effect: 'read',
    answer: ({ city }) => ({ city, tomorrow: 'rain', highC: 14, source: 'mirror' }),
  },
  check_stock: {
    name: 'check_stock',
    description: 'How many units of a product are in stock.',
    input: z.object({ sku: z.string() }),
    effect: 'read',
    answer: ({ sku }) => ({ sku, units: 12 }),
  },
  reserve_stock: {
    name: 'reserve_stock',
    description: 'Reserve units of a product for an order. Each reservation holds units.',
    input: z.object({ sku: z.string(), units: z.number().int() }),
    effect: 'write',
    answer: ({ sku, units }) => ({ reservation: 'rsv_77', sku, units }),
  },
}

function build(world: World, names: readonly string[]): BenchTool[] {
  return names.map((name) => {
    const spec = SPECS[name] as ToolSpec
    return {
      name: spec.name,
      description: spec.description,
      input: spec.input,
      effect: spec.effect,
      execute: (args, options) => world.request(spec.name, spec.effect, args, options, () => spec.answer(args)),
      ...(spec.effect === 'write'
        ? {
            lookup: (options: ToolOptions) => world.lookup(spec.name, options.idempotencyKey, options),
            search: (args: Record<string, unknown>, since: number, options: ToolOptions) => world.search(spec.name, args, since, options),
          }
        : {}),
    }
  })
}

function task(id: string, prompt: string, plan: PlanStep[], mirrors: Record<string, string> = {}): Task {
  const names = [...new Set(plan.flatMap((step) => step.tools))]
  const reads = names.filter((name) => SPECS[name]?.effect === 'read' && !Object.values(mirrors).includes(name))
  const writes = names.filter((name) => SPECS[name]?.effect === 'write')
  return {
    id,
    prompt: `[task:${id}] ${prompt}`,
    plan,
    faultTargets: { reads, writes, mirrored: Object.keys(mirrors) },
    tools: (world) => build(world, names),
  }
}

export const TASKS: readonly Task[] = [
  task('refund', 'Refund order ORD-1001 in full.', [
    { tools: ['get_order'], args: { order: 'ORD-1001' } },
    { tools: ['refund_payment'], args: { payment: 'pi_3Q0042', amountCents: 4200 } },
  ]),
  task('apology', 'Tell ana@example.com that her invoice is fixed.', [
    { tools: ['lookup_customer'], args: { email: 'ana@example.com' } },
    { tools: ['send_email'], args: { to: 'ana@example.com', subject: 'Your invoice is fixed' } },
  ]),
  task('incident', 'Check the checkout logs and open a ticket about what you find.', [
    { tools: ['search_logs'], args: { service: 'checkout' } },
    { tools: ['create_ticket'], args: { title: 'checkout: 502 from upstream since 09:14' } },
  ]),
  task('forecast', 'What is the weather in Lyon tomorrow?', [{ tools: ['get_forecast', 'get_forecast_mirror'], args: { city: 'Lyon' } }], {
    get_forecast: 'get_forecast_mirror',
  }),
  task('reserve', 'Reserve 2 units of SKU-9 and confirm to bo@example.com.', [
    { tools: ['check_stock'], args: { sku: 'SKU-9' } },
    { tools: ['reserve_stock'], args: { sku: 'SKU-9', units: 2 } },
    { tools: ['send_email'], args: { to: 'bo@example.com', subject: 'Your 2 units of SKU-9 are reserved' } },
  ]),
  task(
    'escalate',
    'Look at the payments logs, refund order ORD-1001 and open a ticket; check the Lyon forecast for the on-site visit.',
    [
      { tools: ['search_logs'], args: { service: 'payments' } },
      { tools: ['get_order'], args: { order: 'ORD-1001' } },
      { tools: ['refund_payment'], args: { payment: 'pi_3Q0042', amountCents: 4200 } },
      { tools: ['create_ticket'], args: { title: 'payments: refund issued for ORD-1001' } },
      { tools: ['get_forecast', 'get_forecast_mirror'], args: { city: 'Lyon' } },
    ],
    { get_forecast: 'get_forecast_mirror' },
  ),
]

/** The mirror of a primary tool, if the task has one. */
export const MIRRORS: Readonly<Record<string, string>> = { get_forecast: 'get_forecast_mirror' }
