import type { z } from 'zod'
import type { ConfigDocument } from './config-schema.js'
import type { Broken } from './plan-layers.js'

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The parts of a document that passed the structure check, after it failed: each problem marks the
 * smallest part it is in (a stack entry, a policy, one key of a tool's overrides), and the rest is
 * checked as usual, so a wrong `effect` does not hide a wrong option in the stack. `undefined` when
 * the document is not even an object.
 */
export function salvage(data: unknown, issues: readonly z.core.$ZodIssue[]): { document: ConfigDocument; broken: Broken } | undefined {
  if (!isObject(data)) return undefined
  const entries = new Set<number>()
  const modelEntries = new Set<number>()
  const policies = new Set<string>()
  const toolKeys = new Map<string, Set<string> | 'all'>()
  let stack = !Array.isArray(data.stack)
  let allPolicies = data.policies !== undefined && !isObject(data.policies)
  let allTools = data.tools !== undefined && !isObject(data.tools)
  for (const { path } of issues) {
    const [section, name, key] = path
    if (section === 'stack') {
      if (typeof name === 'number') entries.add(name)
      else stack = true
    } else if (section === 'modelMiddleware') {
      if (typeof name === 'number') modelEntries.add(name)
    } else if (section === 'policies') {
      if (name === undefined) allPolicies = true
      else policies.add(String(name))
    } else if (section === 'tools') {
      if (name === undefined) {
        allTools = true
        continue
      }
      const tool = String(name)
      const marked = toolKeys.get(tool)
      if (key === undefined) toolKeys.set(tool, 'all')
      else if (marked === undefined) toolKeys.set(tool, new Set([String(key)]))
      else if (marked !== 'all') marked.add(String(key))
    }
  }
  const keptPolicies: Record<string, Record<string, unknown>> = {}
  if (!allPolicies && isObject(data.policies)) {
    for (const [name, policy] of Object.entries(data.policies))
      if (!policies.has(name)) keptPolicies[name] = policy as Record<string, unknown>
  }
  const keptTools: ConfigDocument['tools'] = {}
  if (!allTools && isObject(data.tools)) {
    for (const [tool, overrides] of Object.entries(data.tools)) {
      const marked = toolKeys.get(tool)
      if (marked === 'all' || !isObject(overrides)) continue
      const kept: Record<string, unknown> = {}
      for (const [key, value] of Object.entries(overrides)) if (!marked?.has(key)) kept[key] = value
      keptTools[tool] = kept as ConfigDocument['tools'][string]
    }
  }
  const document: ConfigDocument = {
    stack: Array.isArray(data.stack) ? data.stack : [],
    policies: keptPolicies,
    tools: keptTools,
  }
  if (Array.isArray(data.modelMiddleware)) document.modelMiddleware = data.modelMiddleware
  return { document, broken: { entries, modelEntries, policies, allPolicies, stack } }
}
