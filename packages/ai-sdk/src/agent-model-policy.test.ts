// ai 6 (the `ai` devDependency); the same cases run on ai 7 in agent-model-policy.node22.test.ts.
import './agent-model-policy.cases.js'
