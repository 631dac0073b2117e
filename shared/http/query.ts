/**
 * Query strings, read the way the OpenAPI document describes each parameter (`<Operation>QueryShape`,
 * generated from the query schema): an `array` parameter collects every occurrence in order
 * (`?sorting=balance&sorting=-created_at`), any other takes the last one, and an `integer` written as
 * plain decimal digits becomes a number. Everything else stays a string, so that the validator (which
 * does not coerce) refuses `1e2`, `0x10`, `2.0` or `Infinity` at its location with a 422.
 * Parameters the operation does not declare are dropped, as the hosted service ignores them.
 */
import type { QueryShape } from '../generated/validators.js';

const PLAIN_INTEGER = /^[+-]?\d{1,15}$/;

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
    query[name] = kind === 'integer' && PLAIN_INTEGER.test(value.trim()) ? Number(value) : value;
  }
  return query;
}
