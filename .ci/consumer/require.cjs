// CommonJS consumers: require() of the ESM packages (Node >= 20.19, require(esm)).
const assert = require('node:assert/strict')
const { createStack, defaultMiddleware, defineTool } = require('shallot')
const { z } = require('zod')
const names = require('./package.json').shallotPackages
for (const name of names) {
  const module = require(name)
  assert.ok(Object.keys(module).length > 0, `${name}: require() returned nothing`)
}
const echo = defineTool({
  name: 'echo',
  description: 'Echo',
  input: z.object({ text: z.string() }),
  effect: 'read',
  execute: ({ text }) => text,
})
const stack = createStack({ tools: [echo], middleware: defaultMiddleware() })
stack.dispatch({ id: 'c1', name: 'echo', args: { text: 'hi from CommonJS' } }).then((result) => {
  assert.equal(result.ok, true)
  console.log(`require(): ${names.length} packages, ${result.content}`)
})
