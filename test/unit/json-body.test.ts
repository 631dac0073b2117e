import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RequestValidationError } from '#shared/domain/errors.ts';
import { bodyText, iJsonBody, jsonFaults, strictUtf8Body } from '#shared/http/json-body.ts';

const base64 = (bytes: Buffer) => ({ body: bytes.toString('base64'), isBase64Encoded: true });
const issues = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(RequestValidationError);
    return (error as RequestValidationError).issues;
  }
  throw new Error('expected a RequestValidationError');
};
const faults = (text: string) => jsonFaults(text).map(({ loc, type }) => `${loc.join('/')} ${type}`);

describe('bodyText', () => {
  it('passes text through and decodes base64 as UTF-8, keeping a BOM (so that JSON.parse refuses it)', () => {
    expect(bodyText({ body: '{"a":"é"}', isBase64Encoded: false })).toBe('{"a":"é"}');
    expect(bodyText(base64(Buffer.from('{"a":"é😀"}')))).toBe('{"a":"é😀"}');
    expect(bodyText(base64(Buffer.from('\ufeff{}')))).toBe('\ufeff{}');
  });

  it('refuses bytes that are not UTF-8 instead of replacing them with U+FFFD', () => {
    for (const bad of [
      [0xff],
      [0x80],
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xe2, 0x82],
    ]) {
      const body = Buffer.concat([Buffer.from('{"a":"'), Buffer.from(bad), Buffer.from('"}')]);
      expect(issues(() => bodyText(base64(body)))).toEqual([
        {
          loc: ['body'],
          msg: 'JSON decode error: the body is not valid UTF-8',
          type: 'json_invalid',
          input: {},
        },
      ]);
    }
  });

  it('any byte string: accepted exactly when it is UTF-8, and then decoded losslessly', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const buffer = Buffer.from(bytes);
        const lossless = Buffer.from(buffer.toString('utf8')).equals(buffer);
        if (lossless) expect(Buffer.from(bodyText(base64(buffer)))).toEqual(buffer);
        else expect(() => bodyText(base64(buffer))).toThrow(RequestValidationError);
      }),
    );
  });

  it('a missing body is not JSON', () => {
    expect(issues(() => bodyText({ body: undefined, isBase64Encoded: false }))[0]?.type).toBe('json_invalid');
  });
});

describe('jsonFaults (I-JSON, RFC 7493)', () => {
  it('finds nothing in ordinary JSON, including look-alikes of every fault', () => {
    expect(
      faults(
        '{"a":[1,-2,9007199254740991,-9007199254740991,1.5,1e300,1e-300,0.0,-0e-999],"b":"\\\\ud800 \\ud83d\\ude00 😀",' +
          '"c":{"a":1},"d":[{"a":1},{"a":2}],"e":"\\"a\\"","\\"a\\"":true,"f":null,"g":false}',
      ),
    ).toEqual([]);
  });

  it('integers past ±(2^53−1), echoed as their literal', () => {
    expect(jsonFaults('{"m":{"n":9007199254740992},"l":[0,-9223372036854775808]}')).toEqual([
      expect.objectContaining({ loc: ['body', 'm', 'n'], type: 'int_range', input: '9007199254740992' }),
      expect.objectContaining({ loc: ['body', 'l', '1'], type: 'int_range', input: '-9223372036854775808' }),
    ]);
  });

  it('doubles that overflow, and non-zero literals that underflow to 0', () => {
    expect(faults('[1e400,-1.5e309,1e-400,0.0001e-320,0e-400,5e-324]')).toEqual([
      'body/0 finite_number',
      'body/1 finite_number',
      'body/2 float_underflow',
      'body/3 float_underflow',
    ]);
  });

  it('duplicate keys, compared after unescaping, at any depth; the same key in sibling objects is fine', () => {
    expect(faults('{"a":1,"b":{"x":1,"x":2},"\\u0061":3,"c":[{"k":1},{"k":1,"k":2}]}')).toEqual([
      'body/b/x duplicate_key',
      'body/a duplicate_key',
      'body/c/1/k duplicate_key',
    ]);
  });

  it('lone surrogates, escaped or raw, in values and in keys (named by U+FFFD in loc)', () => {
    expect(faults('{"a":"\\ud800","b":["x\\udfff"],"\\udbff":1,"c":"\ud800","d":"\\uD83D\\uDE00"}')).toEqual([
      'body/a string_unicode',
      'body/b/0 string_unicode',
      'body/\ufffd string_unicode',
      'body/c string_unicode',
    ]);
  });

  it('a top-level scalar is located at ["body"]', () => {
    expect(faults('"\\udc00"')).toEqual(['body string_unicode']);
    expect(faults(' 18446744073709551616 ')).toEqual(['body int_range']);
  });

  it('stops at the issue cap and never overflows the stack, however deep', () => {
    expect(jsonFaults(`[${Array(500).fill('1e400').join(',')}]`)).toHaveLength(100);
    const deep = 200_000;
    expect(faults(`${'['.repeat(deep)}9007199254740993${']'.repeat(deep)}`)).toHaveLength(1);
  });

  it('finds exactly the faults an independent model of I-JSON predicts, in text order', () => {
    fc.assert(
      fc.property(tree, (value) => {
        const expected: string[] = [];
        model(value, ['body'], expected);
        expect(faults(serialise(value))).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});

// A JSON value whose objects are lists of entries (so that keys may repeat), whose integers may be
// bigints (so that literals past 2^53 can be written), and whose strings may hold lone surrogates.
type Tree = null | boolean | number | bigint | string | Tree[] | { entries: [string, Tree, boolean][] };

const unit = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('a', 'b', 'é', '"', '\\', '\n', '😀') },
  { weight: 1, arbitrary: fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff') },
);
const str = fc.array(unit, { maxLength: 4 }).map((units) => units.join(''));
const { tree } = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(null, true, false),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
    fc.constantFrom(2n ** 53n - 1n, 2n ** 53n, -(2n ** 53n) + 1n, -(2n ** 53n)),
    str,
    fc.array(tie('tree'), { maxLength: 4 }),
    fc
      .array(fc.tuple(fc.oneof(fc.constantFrom('a', 'b', '\udc00'), str), tie('tree'), fc.boolean()), {
        maxLength: 4,
      })
      .map((entries) => ({ entries })),
  ),
}));

/** Writes a key either as JSON.stringify does or with every character \u-escaped. */
const key = (k: string, escaped: boolean) =>
  escaped
    ? `"${[...Array(k.length).keys()].map((i) => `\\u${k.charCodeAt(i).toString(16).padStart(4, '0')}`).join('')}"`
    : JSON.stringify(k);

function serialise(value: Tree): string {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return `[${value.map(serialise).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${value.entries.map(([k, v, escaped]) => `${key(k, escaped)}:${serialise(v)}`).join(',')}}`;
  return JSON.stringify(value);
}

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const wellFormed = (s: string) => s.replace(new RegExp(LONE.source, 'g'), '\ufffd');

function model(value: Tree, at: string[], out: string[]): void {
  const big = (n: bigint) => n > BigInt(Number.MAX_SAFE_INTEGER) || n < -BigInt(Number.MAX_SAFE_INTEGER);
  if (typeof value === 'bigint') {
    if (big(value)) out.push(`${at.join('/')} int_range`);
  } else if (typeof value === 'number') {
    const literal = JSON.stringify(value);
    if (/^-?\d+$/.test(literal) && big(BigInt(literal))) out.push(`${at.join('/')} int_range`);
  } else if (typeof value === 'string') {
    if (LONE.test(value)) out.push(`${at.join('/')} string_unicode`);
  } else if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) model(item, [...at, String(i)], out);
  } else if (value !== null && typeof value === 'object') {
    const seen = new Set<string>();
    for (const [k, v] of value.entries) {
      const here = [...at, wellFormed(k)];
      if (LONE.test(k)) out.push(`${here.join('/')} string_unicode`);
      if (seen.has(k)) out.push(`${here.join('/')} duplicate_key`);
      seen.add(k);
      model(v, here, out);
    }
  }
}

describe("the body steps of the middleware stack: strictUtf8Body, middy's JSON parser, iJsonBody", () => {
  const parse = async (body: string, isBase64Encoded = false) => {
    const event = { body, isBase64Encoded, headers: {} } as unknown as APIGatewayProxyEventV2;
    const request = { event } as unknown as Parameters<
      NonNullable<ReturnType<typeof iJsonBody>['before']>
    >[0];
    await strictUtf8Body().before?.(request);
    await httpJsonBodyParser({ disableContentTypeCheck: true } as Parameters<
      typeof httpJsonBodyParser
    >[0]).before?.(request as never);
    await iJsonBody().before?.(request);
    return event.body as unknown;
  };
  const refusal = (body: string, isBase64Encoded = false) =>
    parse(body, isBase64Encoded).then(
      () => undefined,
      (error: Error) => (error instanceof RequestValidationError ? error.issues : error.message),
    );

  it('parses valid I-JSON, text or base64', async () => {
    expect(await parse('{"a":[1,"x"]}')).toEqual({ a: [1, 'x'] });
    expect(await parse(Buffer.from('{"é":"ü"}').toString('base64'), true)).toEqual({ é: 'ü' });
  });

  it('refuses a base64 body that is not UTF-8 before the parser can make U+FFFD of it', async () => {
    const bytes = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff]), Buffer.from('"}')]);
    expect(await refusal(bytes.toString('base64'), true)).toEqual([
      {
        loc: ['body'],
        msg: 'JSON decode error: the body is not valid UTF-8',
        type: 'json_invalid',
        input: {},
      },
    ]);
  });

  it('leaves unparsable JSON to the parser (its error becomes the 422 in api.ts) and refuses duplicate keys after it', async () => {
    expect(await refusal('{"a":')).toBe('Invalid or malformed JSON was provided');
    expect(await refusal('{"a":1,"a":1}')).toEqual([
      { loc: ['body', 'a'], msg: 'Key appears more than once in this object', type: 'duplicate_key' },
    ]);
  });
});
