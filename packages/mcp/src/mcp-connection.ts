import type { McpClient } from './types.js'

/** Makes the transport of a fresh connection: a new `StdioClientTransport` (respawns the server) or `StreamableHTTPClientTransport` (re-initialises a session). */
export type TransportFactory = () => unknown

/**
 * The connection of one client, as the tools of one server share it: after a transport failure it is
 * stale, and the next call reconnects first (one reconnection at a time, whoever asks). Behind a
 * circuit breaker that call is the half-open probe, so a dead server is respawned at most once per
 * cooldown.
 */
export class McpConnection {
  readonly client: McpClient
  readonly #transport: TransportFactory | undefined
  #stale = false
  #reconnecting: Promise<void> | undefined

  constructor(client: McpClient, transport: TransportFactory | undefined) {
    this.client = client
    this.#transport = transport
  }

  /** Whether a failure of the transport can be healed here. */
  get canReconnect(): boolean {
    return this.#transport !== undefined
  }

  /** The transport failed (closed, unreachable, session gone): reconnect before the next call. */
  markStale(): void {
    if (this.#transport !== undefined) this.#stale = true
  }

  /** Reconnects if the last call found the transport broken; rejects with the connect failure (nothing was sent). */
  async ready(): Promise<void> {
    if (!this.#stale) return
    this.#reconnecting ??= this.#reconnect().finally(() => {
      this.#reconnecting = undefined
    })
    return this.#reconnecting
  }

  async #reconnect(): Promise<void> {
    const { client } = this
    const make = this.#transport
    if (make === undefined || typeof client.connect !== 'function') return
    // The old transport may still hold a dead session or a child's pipes: drop it before connecting anew.
    await client.close?.().catch(() => {})
    await client.connect((await make()) as never)
    this.#stale = false
  }
}
