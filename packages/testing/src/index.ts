export { type ChaosOptions, type ChaosStats, chaosTool, type FaultKind, faultError } from './chaos-tool.js'
export { fakeProvider } from './fake-provider/fake-provider.js'
export type {
  FakeApi,
  FakeFault,
  FakeHttpFault,
  FakeHttpFaultKind,
  FakeOutcome,
  FakeProvider,
  FakeProviderOptions,
  FakeRawResponse,
  FakeReply,
  FakeRequest,
  FakeStep,
  FakeStreamFault,
  FakeToolCall,
  FakeTruncation,
  FakeTurn,
} from './fake-provider/types.js'
export { type ManualClock, manualClock } from './manual-clock.js'
export {
  type ScriptContext,
  type ScriptedCall,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedTurn,
  type ScriptStep,
  scriptedModel,
} from './scripted-model.js'
export { seededRandom } from './seeded-random.js'
