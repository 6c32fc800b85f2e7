/** What a failed model call says about itself, read the same way from every shape the AI SDK surfaces. */
export interface ModelErrorFacts {
  /** The HTTP status; 200 when the body failed after a successful status line (a reset mid-response). */
  readonly status: number | undefined
  /** The provider's error `type` (Anthropic `overloaded_error`, OpenAI `invalid_request_error`). */
  readonly type: string | undefined
  /** The provider's error `code` (OpenAI `insufficient_quota`, `context_length_exceeded`). */
  readonly code: string | undefined
  /** The provider's own message, unsanitized (callers sanitize before showing it). */
  readonly message: string
  readonly headers: unknown
  /** The SDK's own opinion (`APICallError.isRetryable`), when it gave one. */
  readonly sdkRetryable: boolean | undefined
  /** Error names and Node/undici codes along the cause chain (`AI_APICallError`, `UND_ERR_SOCKET`, `ECONNRESET`). */
  readonly chain: readonly string[]
  /** A plain object rather than an Error: what an error event inside a stream arrives as. */
  readonly plainObject: boolean
}

type Bag = Record<string, unknown>

const isBag = (value: unknown): value is Bag => typeof value === 'object' && value !== null
const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined)

/** Reads a property without letting a throwing getter or a proxy trap escape. */
function read(bag: Bag, key: string): unknown {
  try {
    return bag[key]
  } catch {
    return undefined
  }
}

/** The provider's error body: `data.error` of an APICallError, or the stream event itself (`{ error: {…} }` or flat). */
function providerBody(error: Bag): Bag | undefined {
  const data = read(error, 'data')
  if (isBag(data)) {
    const inner = read(data, 'error')
    return isBag(inner) ? inner : data
  }
  const inner = read(error, 'error')
  if (isBag(inner)) return inner
  return error instanceof Error ? undefined : error
}

const MAX_CHAIN = 8

/** Extracts {@link ModelErrorFacts} from anything thrown or emitted by a model call. */
export function modelErrorFacts(error: unknown): ModelErrorFacts {
  const chain: string[] = []
  const seen = new Set<unknown>()
  for (let link: unknown = error; isBag(link) && !seen.has(link) && chain.length < MAX_CHAIN * 2; link = read(link, 'cause')) {
    seen.add(link)
    const name = str(read(link, 'name'))
    const code = str(read(link, 'code'))
    if (name !== undefined) chain.push(name)
    if (code !== undefined) chain.push(code)
  }
  if (!isBag(error)) {
    return {
      status: undefined,
      type: undefined,
      code: undefined,
      message: typeof error === 'string' ? error : String(typeof error === 'symbol' ? error.description : error),
      headers: undefined,
      sdkRetryable: undefined,
      chain,
      plainObject: false,
    }
  }
  const body = providerBody(error)
  const statusValue = read(error, 'statusCode') ?? read(error, 'status')
  const status = typeof statusValue === 'number' && Number.isInteger(statusValue) ? statusValue : undefined
  const retryable = read(error, 'isRetryable')
  const providerMessage = body === undefined ? undefined : str(read(body, 'message'))
  return {
    status,
    type: body === undefined ? undefined : str(read(body, 'type')),
    code: body === undefined ? undefined : (str(read(body, 'code')) ?? str(read(error, 'code'))),
    message: providerMessage ?? str(read(error, 'message')) ?? '',
    headers: read(error, 'responseHeaders'),
    sdkRetryable: typeof retryable === 'boolean' ? retryable : undefined,
    chain,
    plainObject: !(error instanceof Error),
  }
}
