/**
 * A validation path as the model reads it: `items[2].sku`, or `(root)` for the value itself. At most
 * the first 10 segments, so a hostile schema cannot make the message long.
 *
 * @example
 * formatPath(['items', 2, 'sku']) // 'items[2].sku'
 */
export function formatPath(path: unknown): string {
  if (!Array.isArray(path) || path.length === 0) return '(root)'
  const shown = path
    .slice(0, 10)
    .map((p: unknown, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('')
  return path.length > 10 ? `${shown}…` : shown
}
