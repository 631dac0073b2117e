/**
 * Request bodies, read as RFC 8259 requires and as I-JSON (RFC 7493) restricts, for every operation:
 * a body that some JSON parser would read differently from ours, or that cannot be stored as sent,
 * is a 422 before the schema is consulted, never a silently changed value.
 *
 * - UTF-8 only. API Gateway hands the body over as text or base64 (any body that is not valid
 *   UTF-8 text of a text media type arrives base64); base64 is decoded fatally, so an invalid
 *   byte is refused instead of becoming U+FFFD.
 * - No lone surrogates (`"\ud800"`): they are not characters and cannot be written as UTF-8.
 * - No duplicate keys in an object (compared after unescaping): parsers disagree on which wins.
 * - Numbers: integers (no fraction, no exponent) within ±(2^53−1), the range every parser holds
 *   exactly; other numbers are IEEE 754 doubles, refused when they overflow or when a non-zero
 *   literal would underflow to 0.
 */
import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { RequestValidationError, type ValidationIssue } from '../domain/errors.ts';
import { MAX_ISSUES } from './validation.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const decodeError = (detail?: string): RequestValidationError =>
  new RequestValidationError([
    {
      loc: ['body'],
      msg: detail ? `JSON decode error: ${detail}` : 'JSON decode error',
      type: 'json_invalid',
      input: {},
    },
  ]);

/** The body as text, decoding a base64 body as strict UTF-8. */
export function bodyText(event: Pick<APIGatewayProxyEventV2, 'body' | 'isBase64Encoded'>): string {
  if (event.body === undefined) throw decodeError();
  if (!event.isBase64Encoded) return event.body;
  try {
    return utf8.decode(Buffer.from(event.body, 'base64'));
  } catch {
    throw decodeError('the body is not valid UTF-8');
  }
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');
/** A raw string token that may hold a surrogate, escaped or not (cheap pre-check). */
const MAY_HOLD_SURROGATE = /\\u[dD][89a-fA-F]|[\ud800-\udfff]/;
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

/** Lone surrogates as U+FFFD, so that a `loc` naming such a key is itself valid Unicode. */
const wellFormed = (s: string): string => s.replace(LONE_SURROGATES, '\ufffd');

type Frame =
  | { kind: 'object'; keys: Set<string>; key: string; expectKey: boolean }
  | { kind: 'array'; index: number };

/** Index of the quote closing the string token opened at `start` (the text is valid JSON). */
function stringEnd(text: string, start: number): number {
  for (let from = start + 1; ; ) {
    const quote = text.indexOf('"', from);
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote;
    from = quote + 1;
  }
}

const decodeString = (token: string): string =>
  token.includes('\\') ? (JSON.parse(token) as string) : token.slice(1, -1);

type NumberFault = Pick<ValidationIssue, 'msg' | 'type'>;

function numberFault(
  literal: string,
  fraction: string | undefined,
  exponent: string | undefined,
): NumberFault | undefined {
  const value = Number(literal);
  if (fraction === undefined && exponent === undefined) {
    if (Math.abs(value) <= Number.MAX_SAFE_INTEGER) return undefined;
    return {
      type: 'int_range',
      msg: `Integer should be between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}, the range every JSON parser reads exactly (RFC 7493 §2.2); send larger values as strings`,
    };
  }
  if (!Number.isFinite(value)) return { type: 'finite_number', msg: 'Input should be a finite number' };
  if (value === 0 && /[1-9]/.test(literal.slice(0, literal.length - (exponent?.length ?? 0)))) {
    return {
      type: 'float_underflow',
      msg: 'Number is too close to zero to be stored: it would become 0 (the smallest is 5e-324)',
    };
  }
  return undefined;
}

/**
 * What I-JSON forbids in `text`, which must already parse as JSON: one issue per fault (at most
 * `limit`), located like schema faults. Iterative, so no nesting depth can overflow the stack.
 */
export function jsonFaults(text: string, limit = MAX_ISSUES): ValidationIssue[] {
  const faults: ValidationIssue[] = [];
  const frames: Frame[] = [];
  const loc = () => [
    'body',
    ...frames.map((frame) => (frame.kind === 'object' ? wellFormed(frame.key) : String(frame.index))),
  ];
  for (let i = 0; i < text.length && faults.length < limit; ) {
    const c = text.charCodeAt(i);
    const top = frames[frames.length - 1];
    if (c === 0x7b /* { */) {
      frames.push({ kind: 'object', keys: new Set(), key: '', expectKey: true });
      i++;
    } else if (c === 0x5b /* [ */) {
      frames.push({ kind: 'array', index: 0 });
      i++;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      frames.pop();
      i++;
    } else if (c === 0x2c /* , */) {
      if (top?.kind === 'array') top.index++;
      else if (top) top.expectKey = true;
      i++;
    } else if (c === 0x22 /* " */) {
      const end = stringEnd(text, i);
      const token = text.slice(i, end + 1);
      i = end + 1;
      if (top?.kind === 'object' && top.expectKey) {
        top.expectKey = false;
        top.key = decodeString(token);
        if (LONE_SURROGATE.test(top.key)) faults.push(loneSurrogate(loc()));
        if (top.keys.has(top.key)) {
          faults.push({
            loc: loc(),
            msg: 'Key appears more than once in this object',
            type: 'duplicate_key',
          });
        } else {
          top.keys.add(top.key);
        }
      } else if (MAY_HOLD_SURROGATE.test(token) && LONE_SURROGATE.test(decodeString(token))) {
        faults.push(loneSurrogate(loc()));
      }
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      NUMBER.lastIndex = i;
      const [literal, fraction, exponent] = NUMBER.exec(text) as RegExpExecArray;
      i += literal.length;
      const fault = numberFault(literal, fraction, exponent);
      if (fault) faults.push({ loc: loc(), ...fault, input: literal });
    } else {
      i++; // whitespace, ':' and the letters of true, false and null
    }
  }
  return faults;
}

const loneSurrogate = (at: string[]): ValidationIssue => ({
  loc: at,
  msg: 'String should be valid Unicode: a lone surrogate (\\ud800 to \\udfff, unpaired) is not a character',
  type: 'string_unicode',
});

/** The body text as it arrived (decoded), per event, for the I-JSON check after parsing. */
const arrivedText = new WeakMap<object, string>();

/**
 * Before `@middy/http-json-body-parser`, which parses: a base64 body becomes text here, decoded as
 * strict UTF-8 (the parser's own decoding would turn an invalid byte into U+FFFD), and the text is
 * kept for `iJsonBody`.
 */
export const strictUtf8Body = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: async (request) => {
    const text = bodyText(request.event);
    arrivedText.set(request.event, text);
    request.event.body = text;
    request.event.isBase64Encoded = false;
  },
});

/** After the parser: the I-JSON rules, on the text it parsed (so the text is valid JSON here). */
export const iJsonBody = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: async (request) => {
    const text = arrivedText.get(request.event);
    if (text === undefined) throw new Error('strictUtf8Body did not run before the body parser');
    const faults = jsonFaults(text);
    if (faults.length > 0) throw new RequestValidationError(faults);
  },
});
