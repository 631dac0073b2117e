/**
 * JSON with object keys sorted: equal values give equal text however their keys
 * were ordered. Like JSON.stringify it throws a RangeError on input nested too
 * deeply for the stack.
 */
export function canonicalJson(value: unknown): string {
  return (
    JSON.stringify(value, (_, nested: unknown) =>
      nested !== null && typeof nested === 'object' && !Array.isArray(nested)
        ? Object.fromEntries(Object.entries(nested).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : nested,
    ) ?? 'null'
  );
}
