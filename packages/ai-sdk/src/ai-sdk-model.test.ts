// ai 6 (the `ai` devDependency); the same cases run on ai 7 in ai-sdk-model.node22.test.ts.
import './ai-sdk-model.cases.js'
