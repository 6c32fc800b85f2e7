import type { ToolContext } from '@shallot/core'

/**
 * For a layer that made its own store: the scope that store sees, the stack's tag before the
 * call's scope (`s2/tenant-a`). The store is private to the layer, yet one layer may be given to
 * several stacks, and calls dispatched without a run share the run id `default` in every one of
 * them: without the tag, one stack's completed call would replay as another's. A store the host
 * passes is shared as given, across stacks and processes alike: there, scope and run ids decide.
 *
 * @example
 * const scopeOfStack = stackScopes()
 * storeKeyOf(scopeOfStack(ctx, 'default'), key) // 's1/default <key>' in the first stack, 's2/default <key>' in the next
 */
export function stackScopes(): (ctx: ToolContext, scope: string) => string {
  const byStack = new WeakMap<object, { tag: string; scope: string; tagged: string }>()
  let stacks = 0
  const unstacked = { tag: 's0', scope: '', tagged: '' }
  return function stackScope(ctx, scope) {
    const stack = ctx.stackKey
    // A context not made by a stack (a hand-made one in a test) shares one tag.
    const isKey = typeof stack === 'object' && stack !== null
    let entry = isKey ? byStack.get(stack) : unstacked
    if (entry === undefined) {
      entry = { tag: `s${++stacks}`, scope: '', tagged: '' }
      byStack.set(stack, entry)
    }
    // Scopes repeat call after call: the tagged text is made once per change.
    if (entry.scope !== scope || entry.tagged === '') {
      entry.scope = scope
      entry.tagged = `${entry.tag}/${scope}`
    }
    return entry.tagged
  }
}
