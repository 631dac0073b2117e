/**
 * Meters, as pure functions: which events a meter's filter keeps (`matches`), and the fold of its
 * aggregation over them (`foldEvent`, `mergeStates`, `quantityOf`), in a state that can be folded
 * batch by batch and merged in any order, so that a consumer can fold what it reads in pieces and
 * still answer exactly what a plain fold over the distinct events answers. No I/O, no clock.
 *
 * Rules taken from the hosted service (`server/polar/meter/filter.py`, `aggregation.py`,
 * `kit/metadata.py`); where it disagrees with itself (its SQL and its Python evaluator differ on
 * mismatched types), the rule here is the one the brief states: a type mismatch is false.
 *
 * - A clause names `name`, `source`, `timestamp` (the event's own fields; `timestamp` compares as
 *   whole seconds since the epoch) or a metadata key, with dots for nested objects (`a.b`); a
 *   leading `metadata.` is removed when the meter is written (`normalizeProperty`).
 * - `eq ne gt gte lt lte` compare a string with a string, a number with a number, a boolean with a
 *   boolean (false < true); any other pairing is false, `ne` included. A missing property is false.
 * - `like` / `not_like` test whether the property's text contains the value's text (numbers in their
 *   shortest form, booleans `true`/`false`); a missing property is false for both.
 * - `and` of no clauses and `or` of no clauses both match (as the hosted service).
 * - `sum`, `max`, `min`, `avg` read a numeric property (`timestamp` as epoch seconds, or a metadata
 *   number; booleans are not numbers): an event without one is left out, not refused. `name` and
 *   `source` are never numeric.
 * - `unique` counts the distinct values of a metadata property (the hosted service reads metadata
 *   only, even for `name`); an event without it is left out.
 */

export const FILTER_OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'like', 'not_like'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];
export type ClauseValue = string | number | boolean;

export interface FilterClause {
  property: string;
  operator: FilterOperator;
  value: ClauseValue;
}

export interface MeterFilter {
  conjunction: 'and' | 'or';
  clauses: (FilterClause | MeterFilter)[];
}

export type NumericFunction = 'sum' | 'max' | 'min' | 'avg';
export type MeterAggregation =
  | { func: 'count' }
  | { func: NumericFunction; property: string }
  | { func: 'unique'; property: string };

/** What a meter reads of an event. Metadata values are JSON values (nested objects allowed). */
export interface MeterEvent {
  name: string;
  source: string;
  /** ISO 8601. */
  timestamp: string;
  metadata: Record<string, unknown>;
}

/** Bounds of a meter's filter (a deliberate difference: the hosted service sets none). */
export const MAX_FILTER_DEPTH = 5;
export const MAX_FILTER_CLAUSES = 50;
/** The filter's JSON text in UTF-8 bytes: keeps a meter (and each of its list entries) far below DynamoDB's 400 KB item. */
export const MAX_FILTER_BYTES = 16 * 1024;

const isValue = (v: unknown): v is ClauseValue =>
  typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isInteger(v));

/**
 * Whether an item of `clauses` is a clause: a `property` string, a known `operator` and a value. An
 * item the schema let through as both (it holds a clause's and a filter's fields) is read as a
 * clause, and stored as one (`normalizeFilter`).
 */
export const isClause = (c: FilterClause | MeterFilter): c is FilterClause => {
  const item = c as Partial<FilterClause>;
  return (
    typeof item.property === 'string' &&
    (FILTER_OPERATORS as readonly unknown[]).includes(item.operator) &&
    isValue(item.value)
  );
};

/** `metadata.tokens` → `tokens`, as the hosted service stores it. */
export const normalizeProperty = (property: string): string =>
  property.startsWith('metadata.') ? property.slice('metadata.'.length) : property;

/** The filter as stored: every clause's property normalized, fields the rules do not read left out. */
export function normalizeFilter(filter: MeterFilter): MeterFilter {
  return {
    conjunction: filter.conjunction,
    clauses: filter.clauses.map((c) =>
      isClause(c)
        ? { property: normalizeProperty(c.property), operator: c.operator, value: c.value }
        : normalizeFilter(c),
    ),
  };
}

export function normalizeAggregation(aggregation: MeterAggregation): MeterAggregation {
  return aggregation.func === 'count'
    ? { func: 'count' }
    : ({ func: aggregation.func, property: normalizeProperty(aggregation.property) } as MeterAggregation);
}

export interface DefinitionIssue {
  /** Path below the body (`['filter', 'clauses', '0', 'property']`). */
  loc: string[];
  msg: string;
  input: unknown;
}

/**
 * What makes a filter and an aggregation unusable beyond their schema: nesting deeper than
 * `MAX_FILTER_DEPTH`, more than `MAX_FILTER_CLAUSES` clauses, an empty property (or one that is only
 * `metadata.`), or a dot path with an empty segment.
 */
export function definitionIssues(filter?: MeterFilter, aggregation?: MeterAggregation): DefinitionIssue[] {
  const issues: DefinitionIssue[] = [];
  const checkProperty = (property: string, loc: string[]) => {
    const key = normalizeProperty(property);
    if (key === '' || key.split('.').some((part) => part === '')) {
      issues.push({
        loc,
        msg: 'A property names an event field or a metadata key (dots for nested keys).',
        input: property,
      });
    }
  };
  let clauses = 0;
  const walk = (f: MeterFilter, loc: string[], depth: number) => {
    if (depth > MAX_FILTER_DEPTH) {
      issues.push({ loc, msg: `A filter nests at most ${MAX_FILTER_DEPTH} levels deep.`, input: f });
      return;
    }
    f.clauses.forEach((c, i) => {
      const at = [...loc, 'clauses', String(i)];
      if (isClause(c)) {
        clauses++;
        checkProperty(c.property, [...at, 'property']);
      } else walk(c, at, depth + 1);
    });
  };
  if (filter) {
    walk(filter, ['filter'], 1);
    const bytes = new TextEncoder().encode(JSON.stringify(filter)).length;
    if (bytes > MAX_FILTER_BYTES) {
      issues.push({
        loc: ['filter'],
        msg: `A filter takes at most ${MAX_FILTER_BYTES} bytes as JSON.`,
        input: bytes,
      });
    }
    if (clauses > MAX_FILTER_CLAUSES) {
      issues.push({
        loc: ['filter'],
        msg: `A filter has at most ${MAX_FILTER_CLAUSES} clauses.`,
        input: clauses,
      });
    }
  }
  if (aggregation && aggregation.func !== 'count')
    checkProperty(aggregation.property, ['aggregation', 'property']);
  return issues;
}

// ---------------------------------------------------------------------------------------------
// Filter
// ---------------------------------------------------------------------------------------------

/** A metadata value by dot path (`a.b` reads `{a: {b: …}}`); undefined when absent or null. */
export function metadataValue(metadata: Record<string, unknown>, path: string): unknown {
  let value: unknown = metadata;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    if (!Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
    if (value === null || value === undefined) return undefined;
  }
  return value;
}

/** Whole seconds since the epoch, as the hosted service compares `timestamp`. */
const epochSeconds = (timestamp: string) => Math.floor(Date.parse(timestamp) / 1000);

function propertyValue(event: MeterEvent, property: string): unknown {
  if (property === 'name') return event.name;
  if (property === 'source') return event.source;
  if (property === 'timestamp') return epochSeconds(event.timestamp);
  return metadataValue(event.metadata, property);
}

const text = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

function compare(operator: FilterOperator, actual: unknown, expected: ClauseValue): boolean {
  if (operator === 'like') return text(actual).includes(text(expected));
  if (operator === 'not_like') return !text(actual).includes(text(expected));
  const kind = typeof expected;
  if (typeof actual !== kind || (kind !== 'string' && kind !== 'number' && kind !== 'boolean')) return false;
  const a = actual as string | number | boolean;
  switch (operator) {
    case 'eq':
      return a === expected;
    case 'ne':
      return a !== expected;
    case 'gt':
      return a > expected;
    case 'gte':
      return a >= expected;
    case 'lt':
      return a < expected;
    case 'lte':
      return a <= expected;
  }
}

export function clauseMatches(clause: FilterClause, event: MeterEvent): boolean {
  const actual = propertyValue(event, clause.property);
  if (actual === undefined) return false;
  return compare(clause.operator, actual, clause.value);
}

/** Whether the filter keeps the event. */
export function matches(filter: MeterFilter, event: MeterEvent): boolean {
  if (filter.clauses.length === 0) return true;
  const one = (c: FilterClause | MeterFilter) => (isClause(c) ? clauseMatches(c, event) : matches(c, event));
  return filter.conjunction === 'and' ? filter.clauses.every(one) : filter.clauses.some(one);
}

// ---------------------------------------------------------------------------------------------
// Exact sums of doubles
// ---------------------------------------------------------------------------------------------

/**
 * An exact binary rational `n × 2^e`, kept with `n` odd (or 0 with e = 0) so equal values have
 * equal states. Every finite double is one; sums of them are exact, so the order of a fold, its
 * batches and its merges cannot change the result (a float sum would: 1e16 + 1 − 1e16).
 * Stored as strings/numbers only (JSON- and DynamoDB-safe).
 */
export interface ExactSum {
  /** The numerator as a decimal integer string. */
  n: string;
  e: number;
}

export const EXACT_ZERO: ExactSum = { n: '0', e: 0 };

function normalized(n: bigint, e: number): ExactSum {
  if (n === 0n) return EXACT_ZERO;
  let m = n;
  let x = e;
  while ((m & 1n) === 0n) {
    m >>= 1n;
    x++;
  }
  return { n: m.toString(), e: x };
}

/** The exact value of a finite double. */
export function exactOf(value: number): ExactSum {
  if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
  if (value === 0) return EXACT_ZERO;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  const bits = view.getBigUint64(0);
  const negative = bits >> 63n === 1n;
  const exponent = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & 0xfffffffffffffn;
  const mantissa = exponent === 0 ? fraction : fraction | (1n << 52n);
  const e = exponent === 0 ? -1074 : exponent - 1075;
  return normalized(negative ? -mantissa : mantissa, e);
}

export function addExact(a: ExactSum, b: ExactSum): ExactSum {
  const e = Math.min(a.e, b.e);
  return normalized((BigInt(a.n) << BigInt(a.e - e)) + (BigInt(b.n) << BigInt(b.e - e)), e);
}

/** The exact value's decimal text (every binary rational has a finite decimal expansion). */
export function exactText(x: ExactSum): string {
  const n = BigInt(x.n);
  if (x.e >= 0) return (n << BigInt(x.e)).toString();
  const k = -x.e;
  const negative = n < 0n;
  const digits = ((negative ? -n : n) * 5n ** BigInt(k)).toString().padStart(k + 1, '0');
  const whole = digits.slice(0, digits.length - k);
  const fraction = digits.slice(digits.length - k).replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** The double nearest the exact value (rounded once; beyond the double range, ±Infinity). */
export const exactNumber = (x: ExactSum): number => Number(exactText(x));

// ---------------------------------------------------------------------------------------------
// Aggregation
// ---------------------------------------------------------------------------------------------

/**
 * The state of a fold. Every kind merges associatively and commutatively, so batches can be folded
 * apart and merged in any order. It does not absorb duplicates (count and sum cannot): the consumer
 * folds each distinct event once (its claim on the event's id), and the state here is the arithmetic.
 *
 * `unique` keeps the exact set of distinct values (their canonical JSON texts, sorted): an exact
 * count needs them all (a sketch such as HyperLogLog is cheap but approximate, and the brief asks
 * for totals equal to a plain fold). Its size is the number of distinct values of one customer's
 * period; a consumer that stores it should keep one item per value (a conditional put is then also
 * the duplicate check) rather than one growing set.
 */
export type FoldState =
  | { func: 'count'; count: number }
  | { func: 'sum' | 'avg'; sum: ExactSum; count: number }
  | { func: 'max' | 'min'; value: number | null; count: number }
  | { func: 'unique'; values: string[] };

export function emptyState(aggregation: MeterAggregation): FoldState {
  switch (aggregation.func) {
    case 'count':
      return { func: 'count', count: 0 };
    case 'sum':
    case 'avg':
      return { func: aggregation.func, sum: EXACT_ZERO, count: 0 };
    case 'max':
    case 'min':
      return { func: aggregation.func, value: null, count: 0 };
    case 'unique':
      return { func: 'unique', values: [] };
  }
}

/** The number an aggregation reads of an event, or undefined when the event has none (left out). */
export function numericValue(event: MeterEvent, property: string): number | undefined {
  if (property === 'name' || property === 'source') return undefined;
  const value = propertyValue(event, property);
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  return value + 0; // -0 → 0
}

/** Canonical JSON of a value: object keys sorted, so equal values have one text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(typeof value === 'number' ? value + 0 : value);
}

/** The key `unique` counts for an event, or undefined when it has none. Metadata only (see above). */
export function uniqueKey(event: MeterEvent, property: string): string | undefined {
  const value = metadataValue(event.metadata, property);
  return value === undefined ? undefined : canonical(value);
}

function insertSorted(values: string[], value: string): string[] {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((values[mid] as string) < value) lo = mid + 1;
    else hi = mid;
  }
  if (values[lo] === value) return values;
  return [...values.slice(0, lo), value, ...values.slice(lo)];
}

/** The state after one more event (which the filter already kept). */
export function foldEvent(aggregation: MeterAggregation, state: FoldState, event: MeterEvent): FoldState {
  if (aggregation.func === 'count') return { func: 'count', count: (state as { count: number }).count + 1 };
  if (aggregation.func === 'unique') {
    const key = uniqueKey(event, aggregation.property);
    const s = state as Extract<FoldState, { func: 'unique' }>;
    return key === undefined ? s : { func: 'unique', values: insertSorted(s.values, key) };
  }
  const value = numericValue(event, aggregation.property);
  if (value === undefined) return state;
  if (aggregation.func === 'sum' || aggregation.func === 'avg') {
    const s = state as Extract<FoldState, { func: 'sum' | 'avg' }>;
    return { func: s.func, sum: addExact(s.sum, exactOf(value)), count: s.count + 1 };
  }
  const s = state as Extract<FoldState, { func: 'max' | 'min' }>;
  const pick = aggregation.func === 'max' ? Math.max : Math.min;
  return { func: s.func, value: s.value === null ? value : pick(s.value, value), count: s.count + 1 };
}

/** Folds a batch: the filter, then the aggregation. */
export function foldEvents(
  filter: MeterFilter,
  aggregation: MeterAggregation,
  events: Iterable<MeterEvent>,
  from: FoldState = emptyState(aggregation),
): FoldState {
  let state = from;
  for (const event of events) if (matches(filter, event)) state = foldEvent(aggregation, state, event);
  return state;
}

/** Two states of the same aggregation as one (associative, commutative, `emptyState` its identity). */
export function mergeStates(a: FoldState, b: FoldState): FoldState {
  if (a.func !== b.func) throw new TypeError(`cannot merge ${a.func} with ${b.func}`);
  switch (a.func) {
    case 'count':
      return { func: 'count', count: a.count + (b as typeof a).count };
    case 'sum':
    case 'avg': {
      const other = b as typeof a;
      return { func: a.func, sum: addExact(a.sum, other.sum), count: a.count + other.count };
    }
    case 'max':
    case 'min': {
      const other = b as typeof a;
      const pick = a.func === 'max' ? Math.max : Math.min;
      const value =
        a.value === null ? other.value : other.value === null ? a.value : pick(a.value, other.value);
      return { func: a.func, value, count: a.count + other.count };
    }
    case 'unique': {
      const merged = new Set([...a.values, ...(b as typeof a).values]);
      return { func: 'unique', values: [...merged].sort() };
    }
  }
}

/**
 * The meter's quantity for a state: the count, the exact sum rounded once, the average of the exact
 * sum, the extreme, the number of distinct values. An empty numeric aggregation is 0 (the hosted
 * service answers 0 for a period without events).
 */
export function quantityOf(state: FoldState): number {
  switch (state.func) {
    case 'count':
      return state.count;
    case 'sum':
      return exactNumber(state.sum);
    case 'avg':
      return state.count === 0 ? 0 : exactNumber(state.sum) / state.count;
    case 'max':
    case 'min':
      return state.value ?? 0;
    case 'unique':
      return state.values.length;
  }
}
