// ai 6 (the `ai` devDependency); the same cases run on ai 7 in stream-text.node22.test.ts.
import './stream-text.cases.js'
