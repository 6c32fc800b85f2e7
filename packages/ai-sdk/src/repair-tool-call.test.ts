// ai 6 (the `ai` devDependency); the same cases run on ai 7 in repair-tool-call.node22.test.ts.
import './repair-tool-call.cases.js'
