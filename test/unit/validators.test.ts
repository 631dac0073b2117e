import { describe, expect, it } from 'vitest';
import { loadOpenApi } from '#scripts/openapi.ts';
import {
  listWalletsQueryShape,
  validateCreateClientBody,
  validateCreateSubscriptionBody,
  validateDeleteWebhookEndpointPath,
  validateListWalletsQuery,
} from '#shared/generated/validators.js';
import { parseQuery } from '#shared/http/query.ts';
import { CONTROL_CHARACTER_PATTERNS, toIssues } from '#shared/http/validation.ts';

const UUID4 = '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b';
const UUID1 = 'c232ab00-9414-11ec-b3c8-9f6bdeced846';

type Validator = ((data: unknown) => boolean) & {
  errors?: { instancePath: string; keyword: string }[] | null;
};

/** Instance paths and keywords of the last failure, for readable assertions. */
function failures(validate: Validator, data: unknown): string[] {
  expect(validate(data)).toBe(false);
  return (validate.errors ?? []).map((error) => `${error.instancePath} ${error.keyword}`);
}

describe('validateCreateClientBody', () => {
  const good = { redirect_uris: ['https://example.com/callback'], client_name: 'Example' };

  it('accepts a minimal body, a full body and unknown fields', () => {
    expect(validateCreateClientBody(good)).toBe(true);
    expect(
      validateCreateClientBody({
        ...good,
        redirect_uris: ['https://example.com/a', 'myapp://callback', 'http://localhost:3000/cb'],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        scope: 'openid email',
        client_uri: null,
        logo_uri: 'https://example.com/logo.png',
        tos_uri: null,
        policy_uri: `https://example.com/${'p'.repeat(2083 - 'https://example.com/'.length)}`,
        default_sub_type: 'user',
        software_id: 'ignored',
      }),
    ).toBe(true);
  });

  it('does not modify the body (no defaults filled in)', () => {
    const body = structuredClone(good);
    validateCreateClientBody(body);
    expect(body).toEqual(good);
  });

  it('requires redirect_uris and client_name', () => {
    expect(failures(validateCreateClientBody, { client_name: 'x' })).toEqual([' required']);
    expect(failures(validateCreateClientBody, { redirect_uris: ['https://a.example'] })).toEqual([
      ' required',
    ]);
  });

  it('rejects an empty list, an empty item and an item without a scheme', () => {
    expect(failures(validateCreateClientBody, { ...good, redirect_uris: [] })).toEqual([
      '/redirect_uris minItems',
    ]);
    expect(failures(validateCreateClientBody, { ...good, redirect_uris: [''] })).toContain(
      '/redirect_uris/0 minLength',
    );
    expect(failures(validateCreateClientBody, { ...good, redirect_uris: ['foobar'] })).toEqual([
      '/redirect_uris/0 format',
    ]);
  });

  it('rejects a logo_uri of 2084 characters and a relative one', () => {
    const long = `https://example.com/${'a'.repeat(2084 - 'https://example.com/'.length)}`;
    expect(long).toHaveLength(2084);
    expect(failures(validateCreateClientBody, { ...good, logo_uri: long })).toContain('/logo_uri maxLength');
    expect(failures(validateCreateClientBody, { ...good, tos_uri: 'terms' })).toContain('/tos_uri format');
  });

  it('rejects values outside the enums', () => {
    expect(
      failures(validateCreateClientBody, { ...good, token_endpoint_auth_method: 'private_key_jwt' }),
    ).toEqual(['/token_endpoint_auth_method enum']);
    expect(failures(validateCreateClientBody, { ...good, grant_types: ['client_credentials'] })).toEqual([
      '/grant_types/0 enum',
    ]);
    expect(failures(validateCreateClientBody, { ...good, response_types: ['token'] })).toEqual([
      '/response_types/0 const',
    ]);
    expect(failures(validateCreateClientBody, { ...good, default_sub_type: 'team' })).toEqual([
      '/default_sub_type enum',
    ]);
  });

  it('rejects empty grant and response type lists', () => {
    expect(failures(validateCreateClientBody, { ...good, grant_types: [] })).toEqual([
      '/grant_types minItems',
    ]);
    expect(failures(validateCreateClientBody, { ...good, response_types: [] })).toEqual([
      '/response_types minItems',
    ]);
  });

  it('rejects every control character in client_name, and nothing else', () => {
    for (let c = 0; c <= 0x9f; c++) {
      const client_name = `a${String.fromCharCode(c)}b`;
      const control = c < 0x20 || c === 0x7f;
      expect(validateCreateClientBody({ ...good, client_name }), `U+${c.toString(16)}`).toBe(!control);
    }
    expect(validateCreateClientBody({ ...good, client_name: 'Zoë 😀 \u2028' })).toBe(true);
  });

  it('rejects non-objects and wrong types', () => {
    expect(failures(validateCreateClientBody, [])).toEqual([' type']);
    expect(failures(validateCreateClientBody, { ...good, client_name: 42 })).toEqual(['/client_name type']);
  });
});

describe('validateCreateSubscriptionBody', () => {
  const good = { product_id: UUID4, customer_id: UUID4 };

  it('accepts ids in either case and metadata of every allowed kind', () => {
    expect(validateCreateSubscriptionBody(good)).toBe(true);
    expect(
      validateCreateSubscriptionBody({
        product_id: UUID4.toUpperCase(),
        customer_id: UUID4,
        metadata: { plan: 'pro', seats: 3, ratio: 0.5, trial: false, ['k'.repeat(40)]: 'x'.repeat(500) },
      }),
    ).toBe(true);
  });

  it('rejects missing ids, a UUID of another version and a non-UUID', () => {
    expect(failures(validateCreateSubscriptionBody, { product_id: UUID4 })).toEqual([' required']);
    expect(failures(validateCreateSubscriptionBody, { ...good, product_id: UUID1 })).toEqual([
      '/product_id pattern',
    ]);
    expect(failures(validateCreateSubscriptionBody, { ...good, customer_id: 'not-a-uuid' })).toContain(
      '/customer_id format',
    );
  });

  it('rejects a 41-character key and an empty key', () => {
    expect(
      failures(validateCreateSubscriptionBody, { ...good, metadata: { ['k'.repeat(41)]: 'v' } }),
    ).toContain('/metadata maxLength');
    expect(failures(validateCreateSubscriptionBody, { ...good, metadata: { '': 'v' } })).toContain(
      '/metadata minLength',
    );
  });

  it('accepts 50 pairs and rejects 51', () => {
    const pairs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`key${i}`, i]));
    expect(validateCreateSubscriptionBody({ ...good, metadata: pairs(50) })).toBe(true);
    expect(failures(validateCreateSubscriptionBody, { ...good, metadata: pairs(51) })).toEqual([
      '/metadata maxProperties',
    ]);
  });

  it('counts string lengths in code points', () => {
    const emoji = '😀'.repeat(500); // 500 code points, 1000 UTF-16 units
    expect(emoji).toHaveLength(1000);
    expect(validateCreateSubscriptionBody({ ...good, metadata: { k: emoji } })).toBe(true);
    expect(failures(validateCreateSubscriptionBody, { ...good, metadata: { k: `${emoji}a` } })).toContain(
      '/metadata/k maxLength',
    );
    expect(failures(validateCreateSubscriptionBody, { ...good, metadata: { k: 'a'.repeat(501) } })).toContain(
      '/metadata/k maxLength',
    );
    expect(validateCreateSubscriptionBody({ ...good, metadata: { ['😀'.repeat(40)]: 1 } })).toBe(true);
  });

  it('rejects empty strings, null, arrays and objects as metadata values', () => {
    for (const value of ['', null, ['a'], { a: 1 }]) {
      expect(failures(validateCreateSubscriptionBody, { ...good, metadata: { k: value } })).toContain(
        '/metadata/k anyOf',
      );
    }
  });

  it('rejects metadata that is not an object, and does not coerce', () => {
    expect(failures(validateCreateSubscriptionBody, { ...good, metadata: ['a'] })).toEqual([
      '/metadata type',
    ]);
    expect(failures(validateCreateSubscriptionBody, { ...good, product_id: [UUID4] })).toEqual([
      '/product_id type',
    ]);
  });
});

describe('control characters', () => {
  it('every pattern of the document that keeps them out has its own message', () => {
    const patterns = new Set<string>();
    JSON.stringify(loadOpenApi(), (key, value: unknown) => {
      if (key === 'pattern' && typeof value === 'string' && value.includes('\\x00')) patterns.add(value);
      return value;
    });
    expect(patterns.size).toBeGreaterThan(0);
    expect([...patterns].sort()).toEqual(Object.keys(CONTROL_CHARACTER_PATTERNS).sort());
  });

  it('metadata: keys refuse all of them, string values all but tab, line feed and carriage return', () => {
    const body = (metadata: unknown) => ({ product_id: UUID4, customer_id: UUID4, metadata });
    for (let c = 0; c <= 0x7f; c++) {
      const char = String.fromCharCode(c);
      const control = c < 0x20 || c === 0x7f;
      expect(validateCreateSubscriptionBody(body({ [`k${char}`]: 1 })), `key U+${c}`).toBe(!control);
      const allowed = !control || char === '\t' || char === '\n' || char === '\r';
      expect(validateCreateSubscriptionBody(body({ k: `v${char}` })), `value U+${c}`).toBe(allowed);
    }
    const data = body({ 'a\u0000': 'x', k: 'x\u0007' });
    expect(validateCreateSubscriptionBody(data)).toBe(false);
    expect(toIssues(validateCreateSubscriptionBody.errors ?? [], 'body', data)).toEqual([
      {
        loc: ['body', 'metadata', 'a\u0000'],
        msg: 'String should not contain control characters (U+0000 to U+001F, U+007F)',
        type: 'string_control_character',
        input: 'a\u0000',
      },
      {
        loc: ['body', 'metadata', 'k'],
        msg: 'String should not contain control characters (U+0000 to U+001F, U+007F) other than tab, line feed and carriage return',
        type: 'string_control_character',
        input: 'x\u0007',
      },
    ]);
  });
});

describe('validateListWalletsQuery', () => {
  it('fills in defaults', () => {
    const query = {};
    expect(validateListWalletsQuery(query)).toBe(true);
    expect(query).toEqual({ page: 1, limit: 10, sorting: ['-created_at'] });
  });

  it('does not coerce types (parseQuery turns plain integers into numbers) but fills defaults', () => {
    const query: Record<string, unknown> = { page: 3, sorting: ['balance'] };
    expect(validateListWalletsQuery(query)).toBe(true);
    expect(query).toEqual({ page: 3, limit: 10, sorting: ['balance'] });
    for (const page of ['1e2', '0x10', '2.0', 'Infinity', '3']) {
      expect(failures(validateListWalletsQuery, { page }), page).toEqual(['/page type']);
    }
  });

  it('rejects page 0, limit -1, non-integers and unknown sort values', () => {
    expect(failures(validateListWalletsQuery, { page: 0 })).toEqual(['/page minimum']);
    expect(failures(validateListWalletsQuery, { limit: -1 })).toEqual(['/limit minimum']);
    expect(failures(validateListWalletsQuery, { page: '1.5' })).toEqual(['/page type']);
    expect(failures(validateListWalletsQuery, { limit: 'ten' })).toEqual(['/limit type']);
    expect(failures(validateListWalletsQuery, { sorting: ['balance', 'foo'] })).toEqual(['/sorting/1 enum']);
    expect(failures(validateListWalletsQuery, { sorting: ['foo'] })).toEqual(['/sorting/0 enum']);
  });
});

describe('parseQuery, by the shape generated from the query schema', () => {
  it('collects array parameters in order, takes the last of the others, and numbers only plain integers', () => {
    expect(listWalletsQueryShape).toEqual({ page: 'integer', limit: 'integer', sorting: 'array' });
    expect(
      parseQuery('sorting=balance&page=1&page=2&sorting=-created_at&limit=+5', listWalletsQueryShape),
    ).toEqual({
      page: 2,
      limit: 5,
      sorting: ['balance', '-created_at'],
    });
    for (const raw of ['1e2', '0x10', '2.0', 'Infinity', '', 'ten']) {
      expect(parseQuery(`page=${encodeURIComponent(raw)}`, listWalletsQueryShape), raw).toEqual({
        page: raw,
      });
    }
  });

  it('drops parameters the operation does not declare', () => {
    expect(parseQuery('foo=1&page=3&__proto__=x', listWalletsQueryShape)).toEqual({ page: 3 });
  });

  it('reads decimal integers of any length; past 2^53−1 it reads 2^53−1 (a negative keeps its sign)', () => {
    const parse = (query: string) => parseQuery(query, listWalletsQueryShape);
    expect(parse('page=3&limit=+007')).toEqual({ page: 3, limit: 7 });
    expect(parse('page=10000000000000000&limit=9007199254740993')).toEqual({
      page: Number.MAX_SAFE_INTEGER,
      limit: Number.MAX_SAFE_INTEGER,
    });
    expect(parse(`page=${'9'.repeat(400)}`)).toEqual({ page: Number.MAX_SAFE_INTEGER });
    expect(parse('page=-10000000000000000')).toEqual({ page: -10000000000000000 });
    expect(parse(`limit=-${'9'.repeat(400)}`)).toEqual({ limit: -Number.MAX_VALUE });
  });
});

describe('validateDeleteWebhookEndpointPath', () => {
  it('accepts a UUID4 in either case', () => {
    expect(validateDeleteWebhookEndpointPath({ id: UUID4 })).toBe(true);
    expect(validateDeleteWebhookEndpointPath({ id: UUID4.toUpperCase() })).toBe(true);
  });

  it('rejects anything else', () => {
    expect(failures(validateDeleteWebhookEndpointPath, { id: UUID1 })).toEqual(['/id pattern']);
    expect(failures(validateDeleteWebhookEndpointPath, { id: 'abc' })).toEqual(['/id pattern', '/id format']);
    expect(failures(validateDeleteWebhookEndpointPath, {})).toEqual([' required']);
  });
});
