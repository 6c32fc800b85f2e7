// ai 6 (the `ai` devDependency); the same cases run on ai 7 in shallot-model-layers.node22.test.ts.
import './shallot-model-layers.cases.js'
