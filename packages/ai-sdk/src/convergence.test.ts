// ai 6 (the `ai` devDependency, its v3 providers); the same cases run on ai 7 in convergence.node22.test.ts.
import './convergence.cases.js'
