import { describe, expect, it, vi } from 'vitest'

describe('terminalText on a terminal that shows colour', () => {
  it("keeps the CLI's own colours and shows every other escape as text, a colour code from a tool included", async () => {
    vi.resetModules()
    vi.doMock('./demo/paint.js', async (original) => ({ ...(await original<typeof import('./demo/paint.js')>()), colorEnabled: true }))
    const { terminalText } = await import('./terminal-text.js')
    const painted = '\u001b[32m✓\u001b[0m'
    expect(terminalText(`${painted} tool said \u001b]0;pwned\u0007\u001b[8mhidden\u001b[2J`)).toBe(
      `${painted} tool said \\x1b]0;pwned\\x07\\x1b[8mhidden\\x1b[2J`,
    )
    expect(terminalText('line one\nline two\r')).toBe('line one\nline two\\r')
    vi.doUnmock('./demo/paint.js')
  })
})
