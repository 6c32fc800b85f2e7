// ai 6 (the `ai` devDependency); the same cases run on ai 7 in tool-context.node22.test.ts.
import './tool-context.cases.js'
