/**
 * Turns Ajv errors from the precompiled validators into the contract's 422
 * detail items: `loc` as strings, one item per faulty value, pydantic-style
 * `type` codes and sentences.
 */
import type { ValidationIssue } from '../domain/errors.ts';

export interface AjvError {
  keyword: string;
  instancePath: string;
  schemaPath: string;
  params: Record<string, unknown>;
  propertyName?: string;
}

/** A precompiled validator; its type predicate carries the type of what it accepts. */
export interface Validator<T = unknown> {
  (data: unknown): data is T;
  errors?: AjvError[] | null;
}

export type RequestPart = 'body' | 'query' | 'path';

/**
 * At most this many detail items. Ajv reports every faulty value (allErrors), and each
 * item costs ~100 bytes for as little as 2 bytes of input: a 400 kB body of faulty array
 * items answered 22 MB, past Lambda's 6 MB response limit (a 500 at API Gateway).
 */
export const MAX_ISSUES = 100;

/**
 * Inputs nested deeper than this are not echoed. JSON.parse accepts any depth a 1 MiB
 * body can hold, but JSON.stringify overflows the stack at a few thousand levels, so
 * echoing `[[[[…]]]]` turned a 422 into a 500.
 */
export const MAX_INPUT_DEPTH = 64;

/** Iterative, so that measuring a deep value cannot overflow the stack either. */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [current, depth] = next;
    if (current === null || typeof current !== 'object') continue;
    if (depth >= limit) return true;
    for (const child of Object.values(current)) pending.push([child, depth + 1]);
  }
  return false;
}

const UUID4_PATTERN_MARK = '-4[';

/** The document's patterns that keep control characters out of stored strings, and what each allows. */
export const CONTROL_CHARACTER_PATTERNS: Readonly<Record<string, string>> = {
  '^[^\\x00-\\x1F\\x7F]*$': 'String should not contain control characters (U+0000 to U+001F, U+007F)',
  '^[^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*$':
    'String should not contain control characters (U+0000 to U+001F, U+007F) other than tab, line feed and carriage return',
};

const pointerSegments = (pointer: string): string[] =>
  pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));

function valueAt(root: unknown, segments: string[]): unknown {
  let current: unknown = root;
  for (const segment of segments) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

const quoteList = (values: unknown[]): string => {
  const quoted = values.map((v) => `'${String(v)}'`);
  return quoted.length <= 1 ? (quoted[0] ?? '') : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`;
};

/** Enums longer than this are not spelled out in a message. */
const LONG_ENUM = 12;

const TYPE_CODES: Record<string, [string, string]> = {
  string: ['string_type', 'Input should be a valid string'],
  integer: ['int_type', 'Input should be a valid integer'],
  number: ['float_type', 'Input should be a valid number'],
  boolean: ['bool_type', 'Input should be a valid boolean'],
  object: ['dict_type', 'Input should be a valid dictionary or object'],
  array: ['list_type', 'Input should be a valid list'],
  null: ['none_required', 'Input should be None'],
};

function describe(error: AjvError, part: RequestPart, input: unknown): Pick<ValidationIssue, 'msg' | 'type'> {
  const p = error.params;
  switch (error.keyword) {
    case 'required':
      return { type: 'missing', msg: 'Field required' };
    case 'type': {
      const expected = String(p.type).split(',')[0] ?? 'string';
      if (part !== 'body' && expected === 'integer' && typeof input === 'string') {
        return {
          type: 'int_parsing',
          msg: 'Input should be a valid integer, unable to parse string as an integer',
        };
      }
      if (part !== 'body' && expected === 'boolean' && typeof input === 'string') {
        return { type: 'bool_parsing', msg: 'Input should be a valid boolean, unable to interpret input' };
      }
      const [type, msg] = TYPE_CODES[expected] ?? ['type_error', `Input should be of type ${expected}`];
      return { type, msg };
    }
    case 'minLength':
      return {
        type: 'string_too_short',
        msg: `String should have at least ${p.limit} character${p.limit === 1 ? '' : 's'}`,
      };
    case 'maxLength':
      return { type: 'string_too_long', msg: `String should have at most ${p.limit} characters` };
    case 'minItems':
      return {
        type: 'too_short',
        msg: `List should have at least ${p.limit} item${p.limit === 1 ? '' : 's'}`,
      };
    case 'maxItems':
      return { type: 'too_long', msg: `List should have at most ${p.limit} items` };
    case 'maxProperties':
      return { type: 'too_long', msg: `Dictionary should have at most ${p.limit} items` };
    case 'minimum':
      return { type: 'greater_than_equal', msg: `Input should be greater than or equal to ${p.limit}` };
    case 'exclusiveMinimum':
      return { type: 'greater_than', msg: `Input should be greater than ${p.limit}` };
    case 'maximum':
      return { type: 'less_than_equal', msg: `Input should be less than or equal to ${p.limit}` };
    case 'enum': {
      const allowed = (p.allowedValues as unknown[]) ?? [];
      // A long list (currency codes) would make one detail item kilobytes long: name a few.
      const msg =
        allowed.length > LONG_ENUM
          ? `Input should be one of the ${allowed.length} values the OpenAPI document lists (${allowed
              .slice(0, 3)
              .map((v) => `'${String(v)}'`)
              .join(', ')}, ...)`
          : `Input should be ${quoteList(allowed)}`;
      return { type: 'enum', msg };
    }
    case 'const':
      return { type: 'literal_error', msg: `Input should be ${quoteList([p.allowedValue])}` };
    case 'format':
      if (p.format === 'uri') return { type: 'url_parsing', msg: 'Input should be a valid URL' };
      if (p.format === 'uuid') return { type: 'uuid_parsing', msg: 'Input should be a valid UUID' };
      if (p.format === 'date-time')
        return { type: 'datetime_parsing', msg: 'Input should be a valid datetime' };
      return { type: 'value_error', msg: `Input should match format ${String(p.format)}` };
    case 'pattern': {
      const controls = CONTROL_CHARACTER_PATTERNS[String(p.pattern)];
      if (controls) return { type: 'string_control_character', msg: controls };
      if (String(p.pattern).includes(UUID4_PATTERN_MARK)) {
        return { type: 'uuid_version', msg: 'UUID version 4 expected' };
      }
      return { type: 'string_pattern_mismatch', msg: `String should match pattern '${String(p.pattern)}'` };
    }
    case 'anyOf':
    case 'oneOf':
      return { type: 'union_type', msg: 'Input does not match any of the allowed types' };
    default:
      return { type: 'value_error', msg: 'Invalid value' };
  }
}

/** Lower ranks win when several errors concern one value: the most specific explanation is kept. */
function rank(error: AjvError): number {
  switch (error.keyword) {
    case 'required':
      return 0;
    case 'type':
      return 3;
    case 'pattern':
      return 2;
    case 'anyOf':
    case 'oneOf':
    case 'propertyNames':
      return 4;
    default:
      return 1;
  }
}

/** An error about a union as a whole: the union keyword itself, or its `null` branch's type. */
const isUnionNoise = (error: AjvError): boolean =>
  error.keyword === 'anyOf' ||
  error.keyword === 'oneOf' ||
  (error.keyword === 'type' && String(error.params.type) === 'null');

export function toIssues(errors: readonly AjvError[], part: RequestPart, data: unknown): ValidationIssue[] {
  const chosen = new Map<string, { error: AjvError; segments: string[]; order: number }>();
  // A value inside a nullable list or object (`anyOf: [array, null]`) explains its own fault: the
  // union's errors at the container (`Input should be None`) are noise beside it.
  const explainedInside = (pointer: string) =>
    errors.some((other) => other.instancePath.startsWith(`${pointer}/`) && !isUnionNoise(other));
  errors.forEach((error, order) => {
    // Their nested errors name the faulty key, or say what the chosen branch of an `if` missed.
    if (error.keyword === 'propertyNames' || error.keyword === 'if') return;
    if (isUnionNoise(error) && explainedInside(error.instancePath)) return;
    const segments = pointerSegments(error.instancePath);
    if (error.keyword === 'required') segments.push(String(error.params.missingProperty));
    else if (error.propertyName !== undefined) segments.push(error.propertyName);
    const location = JSON.stringify(segments);
    const previous = chosen.get(location);
    // A type error on one branch of a union is noise when another branch says what is wrong.
    const better = !previous || rank(error) < rank(previous.error);
    if (better) chosen.set(location, { error, segments, order: previous?.order ?? order });
  });
  return [...chosen.values()]
    .sort((a, b) => a.order - b.order)
    .slice(0, MAX_ISSUES)
    .map(({ error, segments }) => {
      const isKey = error.propertyName !== undefined;
      const input =
        error.keyword === 'required'
          ? valueAt(data, segments.slice(0, -1))
          : isKey
            ? error.propertyName
            : valueAt(data, segments);
      const { type, msg } = describe(error, part, input);
      const echo = input !== undefined && !nestedDeeperThan(input, MAX_INPUT_DEPTH);
      return { loc: [part, ...segments], msg, type, ...(echo ? { input } : {}) };
    });
}
