/**
 * Issue 10: input that used to be silently changed or wrongly accepted. Each answer is now exact
 * or a clear 4xx in the contract's shape, and a refused request writes nothing (one round trip:
 * authentication). One block per finding, then the decisions the contract left open.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('integrity');
});
afterAll(() => world?.drop());

const pat = () => world.demo.personal_access_token;
const register = (body: unknown, options: { base64?: boolean; headers?: Record<string, string> } = {}) =>
  world.call('POST', '/v1/oauth2/register', { token: pat(), body, ...options });
const subscribe = (body: unknown, options: { base64?: boolean } = {}) =>
  world.call('POST', '/v1/subscriptions/', { token: pat(), body, ...options });
const ids = () => `"product_id":"${world.demo.free_product_id}","customer_id":"${world.demo.customer_id}"`;
const client = (fields: Record<string, unknown> = {}) => ({
  redirect_uris: ['https://app.example/cb'],
  client_name: 'App',
  ...fields,
});

/** Sends, and checks that a refusal cost only the authentication read: nothing was written. */
async function refused(send: () => Promise<Reply>): Promise<Reply> {
  world.resetCount();
  const reply = await send();
  expect(reply.status, reply.raw).toBeGreaterThanOrEqual(400);
  expect(reply.status, reply.raw).toBeLessThan(500);
  expect(world.roundTrips(), 'a refused request reads the credential and writes nothing').toBe(1);
  return reply;
}

const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))));

/** Byte sequences that are not UTF-8 (RFC 3629): stray, overlong, surrogate, beyond U+10FFFF, cut short. */
const NOT_UTF8: [string, number[]][] = [
  ['0xFF', [0xff]],
  ['a lone continuation byte', [0x80]],
  ['an overlong "/"', [0xc0, 0xaf]],
  ['an encoded surrogate (CESU-8)', [0xed, 0xa0, 0x80]],
  ['a code point past U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
  ['a sequence cut short', [0xe2, 0x82]],
];

describe('1. bodies that are not UTF-8 are refused (422 json_invalid), never stored as U+FFFD', () => {
  const notUtf8 = { loc: ['body'], msg: expect.stringMatching(/UTF-8/), type: 'json_invalid', input: {} };

  it.each(NOT_UTF8)('Create Client, client_name with %s', async (_, sequence) => {
    const body = bytes('{"redirect_uris":["https://app.example/cb"],"client_name":"a', sequence, 'b"}');
    for (const base64 of [false, true]) {
      const reply = await refused(() => register(body, { base64 }));
      expect(reply.status).toBe(422);
      expect(reply.body).toEqual({ error: 'RequestValidationError', detail: [notUtf8] });
    }
  });

  it.each(NOT_UTF8)('Create Subscription, a metadata value with %s', async (_, sequence) => {
    const body = bytes(`{${ids()},"metadata":{"note":"x`, sequence, '"}}');
    for (const base64 of [false, true]) {
      const reply = await refused(() => subscribe(body, { base64 }));
      expect(reply.status).toBe(422);
      expect(reply.body).toEqual({ error: 'RequestValidationError', detail: [notUtf8] });
    }
  });

  it('an invalid byte outside any string is refused the same way', async () => {
    const reply = await refused(() => subscribe(bytes(`{${ids()}`, [0xff], '}')));
    expect(reply.body.detail).toEqual([notUtf8]);
  });

  it('valid UTF-8 arrives intact whether the event carries it as text or base64', async () => {
    const name = 'Zoë 中文 😀 \ufffd';
    for (const base64 of [false, true]) {
      const reply = await register(Buffer.from(JSON.stringify(client({ client_name: name }))), { base64 });
      expect(reply.status).toBe(201);
      expect(reply.body.client_name).toBe(name);
    }
  });

  it('a lone surrogate escape ("\\ud800") is refused: it is no character and cannot be stored as UTF-8', async () => {
    const reply = await refused(() =>
      register('{"redirect_uris":["https://app.example/cb"],"client_name":"a\\ud800b"}'),
    );
    expect(reply.status).toBe(422);
    expect(reply.body.detail).toEqual([
      { loc: ['body', 'client_name'], msg: expect.stringMatching(/surrogate/), type: 'string_unicode' },
    ]);
    const key = await refused(() => subscribe(`{${ids()},"metadata":{"\\udc00":"x"}}`));
    expect(key.body.detail).toEqual([expect.objectContaining({ type: 'string_unicode' })]);
    expect(key.body.detail[0].loc).toEqual(['body', 'metadata', '\ufffd']);
  });

  it('an escaped surrogate pair is one character, accepted', async () => {
    const reply = await subscribe(`{${ids()},"metadata":{"e":"\\ud83d\\ude00"}}`);
    expect(reply.status).toBe(201);
    expect(reply.body.metadata).toEqual({ e: '😀' });
  });
});

describe('2. integers outside ±(2^53−1) are refused (422 int_range), not rounded', () => {
  const metadata = (text: string) => `{${ids()},"metadata":${text}}`;

  it.each([
    ['9007199254740993', '2^53 + 1 (was answered as 9007199254740992)'],
    ['-9223372036854775808', 'the smallest int64 (was -9223372036854776000)'],
    ['9007199254740992', '2^53, exact as a double but outside the interoperable range'],
    ['-9007199254740992', '-2^53'],
    ['123456789012345678901234567890', 'far past the range'],
    [`1${'0'.repeat(400)}`, 'past the double range'],
  ])('%s: %s', async (literal) => {
    const reply = await refused(() => subscribe(metadata(`{"n":${literal}}`)));
    expect(reply.status).toBe(422);
    expect(reply.body).toEqual({
      error: 'RequestValidationError',
      detail: [
        {
          loc: ['body', 'metadata', 'n'],
          msg: expect.stringContaining('9007199254740991'),
          type: 'int_range',
          input: literal,
        },
      ],
    });
  });

  it('both ends of the range round-trip digit for digit', async () => {
    const reply = await subscribe(
      metadata('{"max":9007199254740991,"min":-9007199254740991,"zero":0,"one":-1}'),
    );
    expect(reply.status).toBe(201);
    expect(reply.raw).toContain(
      '"metadata":{"max":9007199254740991,"min":-9007199254740991,"zero":0,"one":-1}',
    );
  });

  it('numbers with a fraction or an exponent are doubles: finite ones are kept, 0-underflow and overflow refused', async () => {
    const kept = await subscribe(metadata('{"big":1e300,"tiny":1e-200,"half":-0.5,"e16":1e16}'));
    expect(kept.status).toBe(201);
    expect(kept.body.metadata).toEqual({ big: 1e300, tiny: 1e-200, half: -0.5, e16: 1e16 });
    const underflow = await refused(() => subscribe(metadata('{"u":1e-400}')));
    expect(underflow.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'metadata', 'u'], type: 'float_underflow', input: '1e-400' }),
    ]);
    const overflow = await refused(() => subscribe(metadata('{"o":-1e400}')));
    expect(overflow.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'metadata', 'o'], type: 'finite_number', input: '-1e400' }),
    ]);
  });
});

describe('3. client_uri, logo_uri, tos_uri and policy_uri: absolute https URLs only (http for loopback)', () => {
  const FIELDS = ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri'];
  const BAD = [
    'javascript:alert(1)',
    'JavaScript:alert(1)',
    'data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==',
    'vbscript:msgbox(1)',
    'file:///etc/passwd',
    'ftp://app.example/tos',
    'http://app.example/tos',
    'https:///tos',
    'https:app.example/tos',
    'https://user:secret@app.example/tos',
  ];

  it.each(FIELDS.flatMap((field) => BAD.map((uri) => [field, uri])))(
    '%s %s → 400 invalid_client_metadata',
    async (field, uri) => {
      const reply = await refused(() => register(client({ [field as string]: uri })));
      expect(reply.status).toBe(400);
      expect(reply.body).toEqual({
        error: 'invalid_client_metadata',
        error_description: expect.stringContaining(field as string),
      });
    },
  );

  it('client_uri "not a url" → 400 invalid_client_metadata', async () => {
    const reply = await refused(() => register(client({ client_uri: 'not a url' })));
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe('invalid_client_metadata');
  });

  it('https anywhere and http to a loopback host are accepted and echoed exactly', async () => {
    const fields = {
      client_uri: 'https://app.example',
      logo_uri: 'HTTPS://APP.EXAMPLE/logo.png?v=2#top',
      tos_uri: 'http://localhost:3000/tos',
      policy_uri: 'http://127.0.0.1/policy',
    };
    const reply = await register(client(fields));
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject(fields);
  });
});

describe('4. http(s) redirect URIs need a host (RFC 9110 §4.2): 400 invalid_redirect_uri', () => {
  it.each([
    'https:///callback',
    'https:callback',
    'http:///cb',
    'https://:443/cb',
    'https://user@app.example/cb',
    'https://app.example@evil.example/cb',
  ])('%s', async (uri) => {
    const reply = await refused(() => register(client({ redirect_uris: [uri] })));
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ error: 'invalid_redirect_uri', error_description: expect.any(String) });
  });

  it('private-use schemes keep their own rules (RFC 8252 §7.1)', async () => {
    const uris = ['myapp:///callback', 'com.example.app:/oauth2redirect', 'https://app.example/cb'];
    const reply = await register(client({ redirect_uris: uris }));
    expect(reply.status).toBe(201);
    expect(reply.body.redirect_uris).toEqual(uris);
  });
});

describe('5. any decimal integer ≥ 1 is a valid page or limit', () => {
  const list = (query: string, token = world.demo.large_customer_session_token) =>
    world.call('GET', `/v1/customer-portal/wallets/?${query}`, { token });

  it.each(['10000000000000000', '9007199254740993', '9'.repeat(400), '+0000000000000000000100'])(
    'limit=%s is clamped to 100',
    async (limit) => {
      const reply = await list(`limit=${limit}`);
      expect(reply.status, reply.raw).toBe(200);
      expect(reply.body.items).toHaveLength(100);
      expect(reply.body.pagination).toEqual({ total_count: 120, max_page: 2 });
    },
  );

  it.each(['10000000000000000', '9'.repeat(400)])('page=%s is past the end: 200, no items', async (page) => {
    const reply = await list(`page=${page}&limit=1000000000000000000000`);
    expect(reply.status, reply.raw).toBe(200);
    expect(reply.body).toEqual({ items: [], pagination: { total_count: 120, max_page: 2 } });
  });

  it.each([
    ['page=-10000000000000000', 'page', 'greater_than_equal'],
    ['limit=-99999999999999999999', 'limit', 'greater_than_equal'],
    ['page=00', 'page', 'greater_than_equal'],
    ['page=1e20', 'page', 'int_parsing'],
    ['limit=10000000000000000.0', 'limit', 'int_parsing'],
  ])('%s is still a 422', async (query, name, type) => {
    const reply = await list(query);
    expect(reply.status).toBe(422);
    expect(reply.body.detail).toEqual([expect.objectContaining({ loc: ['query', name], type })]);
  });
});

describe('decided: control characters in stored strings', () => {
  const hex = (c: string) => (c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');
  it.each(['\u0000', '\u0001', '\t', '\n', '\u001f', '\u007f'].map((c) => [hex(c), c]))(
    'client_name with U+%s → 422',
    async (_, control) => {
      const reply = await refused(() => register(client({ client_name: `a${control}b` })));
      expect(reply.status).toBe(422);
      expect(reply.body.detail).toEqual([
        expect.objectContaining({ loc: ['body', 'client_name'], type: 'string_control_character' }),
      ]);
    },
  );

  it('metadata keys refuse every control character; values refuse all but tab, line feed and carriage return', async () => {
    for (const [metadata, loc] of [
      ['{"a\\u0000":"x"}', ['body', 'metadata', 'a\u0000']],
      ['{"a\\tb":"x"}', ['body', 'metadata', 'a\tb']],
      ['{"k":"\\u0000"}', ['body', 'metadata', 'k']],
      ['{"k":"a\\u001bb"}', ['body', 'metadata', 'k']],
      ['{"k":"a\\u007fb"}', ['body', 'metadata', 'k']],
    ] as const) {
      const reply = await refused(() => subscribe(`{${ids()},"metadata":${metadata}}`));
      expect(reply.status, metadata).toBe(422);
      expect(reply.body.detail, metadata).toEqual([
        expect.objectContaining({ loc, type: 'string_control_character' }),
      ]);
    }
    const reply = await subscribe(`{${ids()},"metadata":{"note":"line 1\\r\\nline 2\\tend"}}`);
    expect(reply.status).toBe(201);
    expect(reply.body.metadata).toEqual({ note: 'line 1\r\nline 2\tend' });
  });
});

describe('decided: RFC 7591 §2.1 grant and response types', () => {
  it('empty lists are a 422, like an empty redirect_uris', async () => {
    for (const field of ['grant_types', 'response_types']) {
      const reply = await refused(() => register(client({ [field]: [] })));
      expect(reply.status).toBe(422);
      expect(reply.body.detail).toEqual([
        expect.objectContaining({ loc: ['body', field], type: 'too_short' }),
      ]);
    }
  });

  it('the code response type needs the authorization_code grant (refresh_token alone is useless): 400', async () => {
    const reply = await refused(() => register(client({ grant_types: ['refresh_token'] })));
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({
      error: 'invalid_client_metadata',
      error_description: expect.stringContaining('authorization_code'),
    });
    const ok = await register(client({ grant_types: ['authorization_code'] }));
    expect(ok.status).toBe(201);
    expect(ok.body.grant_types).toEqual(['authorization_code']);
  });
});

describe('decided: duplicate keys in a body are refused (422 duplicate_key), not "last one wins"', () => {
  it('at the top level, nested, and spelled differently but equal once decoded', async () => {
    const cases: [() => Promise<Reply>, string[]][] = [
      [
        () => register('{"redirect_uris":["https://app.example/cb"],"client_name":"a","client_name":"b"}'),
        ['body', 'client_name'],
      ],
      [() => subscribe(`{${ids()},"metadata":{"plan":"gold","plan":"free"}}`), ['body', 'metadata', 'plan']],
      [() => subscribe(`{${ids()},"metadata":{"a":1,"\\u0061":2}}`), ['body', 'metadata', 'a']],
      [() => subscribe(`{${ids()},"product_id":"${world.demo.paid_product_id}"}`), ['body', 'product_id']],
    ];
    for (const [send, loc] of cases) {
      const reply = await refused(send);
      expect(reply.status).toBe(422);
      expect(reply.body.detail).toEqual([
        { loc, msg: expect.stringMatching(/more than once/), type: 'duplicate_key' },
      ]);
    }
  });
});

describe('decided: every Create Client answer carries Cache-Control: no-store', () => {
  it.each([
    ['400', () => register(client({ scope: 'bogus' }))],
    ['401 Unauthorized', () => world.call('POST', '/v1/oauth2/register', { body: client() })],
    [
      '401 invalid_token',
      () => world.call('POST', '/v1/oauth2/register', { token: 'polar_pat_nope', body: client() }),
    ],
    ['415', () => register(JSON.stringify(client()), { headers: { 'content-type': 'text/plain' } })],
    ['422', () => register({})],
  ])('%s', async (_, send) => {
    const reply = await send();
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.headers.pragma).toBe('no-cache');
  });
});
