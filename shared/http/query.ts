/**
 * Query strings, read the way the OpenAPI document describes each parameter (`<Operation>QueryShape`,
 * generated from the query schema): an `array` parameter collects every occurrence in order
 * (`?sorting=balance&sorting=-created_at`), any other takes the last one, and an `integer` written as
 * plain decimal digits, however many, becomes a number. Everything else stays a string, so that the
 * validator (which does not coerce) refuses `1e2`, `0x10`, `2.0` or `Infinity` at its location with
 * a 422. Parameters the operation does not declare are dropped, as the hosted service ignores them.
 */
import type { QueryShape } from '../generated/validators.js';

const PLAIN_INTEGER = /^[+-]?\d+$/;

/**
 * A decimal integer as the validator should see it. Any length is valid input: magnitudes past
 * 2^53−1 are read as 2^53−1 (for `page`, a page past any end; for `limit`, one served as 100),
 * except that a negative keeps its nearest double, so that the 422 it earns echoes it as closely
 * as a number can.
 */
function plainInteger(digits: string): number {
  const value = Number(digits);
  if (value > Number.MAX_SAFE_INTEGER) return Number.MAX_SAFE_INTEGER;
  return Math.max(value, -Number.MAX_VALUE);
}

export function parseQuery(rawQueryString: string, shape: QueryShape): Record<string, unknown> {
  const params = new URLSearchParams(rawQueryString);
  const query: Record<string, unknown> = {};
  for (const [name, kind] of Object.entries(shape)) {
    const values = params.getAll(name);
    if (values.length === 0) continue;
    if (kind === 'array') {
      query[name] = values;
      continue;
    }
    const value = values.at(-1) as string;
    query[name] = kind === 'integer' && PLAIN_INTEGER.test(value.trim()) ? plainInteger(value.trim()) : value;
  }
  return query;
}
