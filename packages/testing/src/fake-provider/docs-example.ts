import { fakeProvider, manualClock } from '../index.js'

/** Asks twice, waiting out a 429's Retry-After on the manual clock; returns the answer and when each request arrived. */
export async function waitOutRateLimit() {
  const clock = manualClock()
  const provider = await fakeProvider({ now: clock.now, script: [{ fault: 'rate_limit', retryAfterSeconds: 2 }, { text: 'Hello!' }] })
  try {
    const ask = () =>
      fetch(`${provider.openaiBaseURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-fake' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      })
    const limited = await ask() // 429 with retry-after: 2
    await clock.advance(Number(limited.headers.get('retry-after')) * 1000)
    const answer = (await (await ask()).json()) as { choices: Array<{ message: { content: string } }> }
    return { status: limited.status, text: answer.choices[0]?.message.content, arrivals: provider.requests.map((r) => r.at) }
  } finally {
    await provider.close()
  }
}
