// ai 6 with the provider packages it installs (@ai-sdk/openai 3, @ai-sdk/anthropic 3); ai 7 in soft-error-wire.node22.test.ts.
import './soft-error-wire.cases.js'
