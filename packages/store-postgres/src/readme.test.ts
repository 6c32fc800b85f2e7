import { readFileSync } from 'node:fs'
import { defineTool } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { billingAgent } from './readme-example.js'
import { usePostgres } from './test-support/postgres-fixture.js'

const pg = usePostgres()
const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it('shows the example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/store-postgres'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: two workers on one database charge once, and the run resumes from its checkpoint', async () => {
    let charges = 0
    const chargeCard = defineTool({
      name: 'charge_card',
      description: 'Charge a card',
      input: z.object({ order: z.string(), amount: z.number() }),
      effect: 'write',
      execute: ({ order }) => {
        charges++
        return { chargeId: `ch_${order}` }
      },
    })
    const script = () => scriptedModel([{ toolCalls: [{ name: 'charge_card', args: { order: 'o-1', amount: 5 } }] }, { text: 'charged' }])
    const a = await billingAgent(pg.server.url, script(), [chargeCard])
    const b = await billingAgent(pg.server.url, script(), [chargeCard])
    try {
      expect(await a.agent.run({ input: 'charge o-1', runId: 'run-1' })).toMatchObject({ status: 'completed', output: 'charged' })
      // The same run again on another worker: the charge replays from PostgreSQL instead of running twice.
      expect(await b.agent.run({ input: 'charge o-1', runId: 'run-1' })).toMatchObject({ status: 'completed' })
      expect(charges).toBe(1)
      expect(await b.agent.resume('run-1')).toMatchObject({ status: 'completed', output: 'charged' })
    } finally {
      await a.close()
      await b.close()
    }
  })
})
