export { type ManualClock, manualClock } from './manual-clock.js'
export { seededRandom } from './seeded-random.js'
