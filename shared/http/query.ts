/**
 * Query strings, read the way the OpenAPI document describes each parameter (`<Operation>QueryShape`,
 * generated from the query schema): an `array` parameter collects every occurrence in order
 * (`?sorting=balance&sorting=-created_at`), an `object` (deepObject) parameter collects each
 * `name[key]=value` under its key, any other takes the last one; an `integer` written as plain decimal
 * digits, however many, becomes a number, and a `boolean` written `true` or `false` a boolean.
 * Everything else stays a string, so that the validator (which does not coerce) refuses `1e2`,
 * `0x10`, `2.0`, `Infinity` or `yes` at its location with a 422. Parameters the operation does not
 * declare are dropped, as the hosted service ignores them.
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
    if (kind === 'object') {
      const members = deepObject(params, name);
      if (members) query[name] = members;
      continue;
    }
    const values = params.getAll(name);
    if (values.length === 0) continue;
    if (kind === 'array') {
      query[name] = values;
      continue;
    }
    const value = values.at(-1) as string;
    if (kind === 'integer' && PLAIN_INTEGER.test(value.trim())) query[name] = plainInteger(value.trim());
    else if (kind === 'boolean' && (value === 'true' || value === 'false')) query[name] = value === 'true';
    else query[name] = value;
  }
  return query;
}

/** `name[key]=value` pairs (OpenAPI `deepObject`), each key's values in order; none: undefined. */
function deepObject(params: URLSearchParams, name: string): Record<string, string[]> | undefined {
  let members: Record<string, string[]> | undefined;
  for (const [parameter, value] of params) {
    if (!parameter.startsWith(`${name}[`) || !parameter.endsWith(']')) continue;
    const key = parameter.slice(name.length + 1, -1);
    // No prototype: a key named `__proto__` is data here.
    members ??= Object.create(null) as Record<string, string[]>;
    if (!Object.hasOwn(members, key)) members[key] = [];
    members[key]?.push(value);
  }
  return members;
}
