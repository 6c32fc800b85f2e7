export { rateLimitDefinition as default, rateLimitDefinition as definition, rateLimitDefinition } from './definition.js'
export { type RateLimitLayer, type RateLimitOptions, rateLimit, rateLimitOptionsSchema } from './rate-limit.js'
export { type Bucket, type Take, takeToken } from './token-bucket.js'
