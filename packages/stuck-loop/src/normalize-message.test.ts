import { describe, expect, it } from 'vitest'
import { normalizeMessage } from './normalize-message.js'

describe('normalizeMessage', () => {
  it('makes failures that differ only in a duration the same outcome', () => {
    expect(normalizeMessage('Tool took 1203ms')).toBe(normalizeMessage('tool took 998ms'))
    expect(normalizeMessage('timed out after 1.5s')).toBe(normalizeMessage('timed out after 30s'))
  })

  it('replaces uuids, timestamps and hex ids with placeholders', () => {
    expect(normalizeMessage('request 123e4567-e89b-12d3-a456-426614174000 failed')).toBe('request <uuid> failed')
    expect(normalizeMessage('at 2026-03-04T09:00:00.123Z and 2026-03-04 10:11:12+05:00')).toBe('at <time> and <time>')
    expect(normalizeMessage('trace 9f2c4e1a, ptr 0x7ffe, id req_8f3a9c2b')).toBe('trace <hex>, ptr <hex>, id req_<hex>')
  })

  it('keeps words that merely look like hex', () => {
    expect(normalizeMessage('Deadline exceeded in facade')).toBe('deadline exceeded in facade')
  })

  it('collapses whitespace and case', () => {
    expect(normalizeMessage('  File   NOT\n found ')).toBe('file not found')
  })

  it('keeps messages that say different things apart', () => {
    expect(normalizeMessage('file not found')).not.toBe(normalizeMessage('permission denied'))
  })

  it('looks only at the first 500 characters', () => {
    const head = 'x'.repeat(500)
    expect(normalizeMessage(`${head}a`)).toBe(normalizeMessage(`${head}b`))
  })
})
