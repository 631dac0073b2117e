import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { handler as notFoundHandler } from '../../functions/route-not-found/handler.ts';
import {
  encodeRequestBody,
  formatRequestTime,
  fromLambdaResult,
  InvalidLambdaResponseError,
  type RequestLike,
  routeRequest,
  stackRoutes,
  toApiGatewayEvent,
} from '../../scripts/local/apigw.ts';
import { type LambdaHandler, startApiServer } from '../../scripts/local/server.ts';
import { corsPolicy } from '../../shared/http/cors.ts';
import { methodsForPath, selectRoute, shadowedVariables } from '../../shared/http/routes.ts';
import { operations, routeNotFound } from '../../shared/operations.ts';

const webhookId = '5a1c0e8e-8f0a-4c56-9d0b-7b1c2d3e4f50';

function fakeRequest(method: string, url: string, rawHeaders: string[] = []): RequestLike {
  return {
    method,
    url,
    httpVersion: '1.1',
    rawHeaders: ['Host', '127.0.0.1:3000', ...rawHeaders],
    socket: { remoteAddress: '::ffff:127.0.0.1', localPort: 3000 },
  };
}

describe("routeRequest: API Gateway's route selection over the stack's routes", () => {
  const fn = (name: string) => ({ name, entry: `functions/${name}/handler.ts` });
  const route = (routeKey: string, name: string) => {
    const [method, path] = routeKey.split(' ') as [string, string];
    return { routeKey, method, path, target: fn(name) };
  };

  it("sends both spellings of every operation's path to its function", () => {
    for (const operation of operations) {
      const path = operation.path.replace('{id}', webhookId);
      const slashless = path.replace(/\/$/, '');
      expect(routeRequest(operation.method, slashless)).toMatchObject({
        target: { name: operation.name },
        routeKey: `${operation.method} ${operation.path.replace(/\/$/, '')}`,
      });
      // The trailing slash reaches the greedy twin with an empty remainder, which the function serves.
      expect(routeRequest(operation.method, `${slashless}/`)).toMatchObject({
        target: { name: operation.name },
        routeKey: `${operation.method} ${operation.path.replace(/\/$/, '')}/{proxy+}`,
        pathParameters: expect.objectContaining({ proxy: '' }),
      });
    }
  });

  it('extracts {id} from exactly one segment, decoded; a longer path reaches the greedy twin', () => {
    expect(routeRequest('DELETE', `/v1/webhooks/endpoints/${webhookId}`)).toMatchObject({
      routeKey: 'DELETE /v1/webhooks/endpoints/{id}',
      pathParameters: { id: webhookId },
    });
    expect(routeRequest('DELETE', '/v1/webhooks/endpoints/a%20b')).toMatchObject({
      pathParameters: { id: 'a b' },
    });
    expect(routeRequest('DELETE', '/v1/webhooks/endpoints/a/b/c')).toMatchObject({
      routeKey: 'DELETE /v1/webhooks/endpoints/{id}/{proxy+}',
      pathParameters: { id: 'a', proxy: 'b/c' },
    });
    // No segment for {id}: no operation route; the $default function answers.
    expect(routeRequest('DELETE', '/v1/webhooks/endpoints/')).toMatchObject({ routeKey: '$default' });
    expect(routeRequest('DELETE', '/v1/webhooks/endpoints//')).toMatchObject({ routeKey: '$default' });
  });

  it('tells the customer routes apart: by id, by external id, the list, and their slashed twins', () => {
    const id = '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b';
    const target = (method: string, path: string) => {
      const routed = routeRequest(method, path);
      return [routed?.target.name, routed?.pathParameters];
    };
    expect(target('GET', '/v1/customers')).toEqual(['list-customers', {}]);
    expect(target('GET', '/v1/customers/')).toEqual(['list-customers', { proxy: '' }]);
    expect(target('POST', '/v1/customers/')).toEqual(['create-customer', { proxy: '' }]);
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const suffix = method === 'GET' ? '' : `-${method === 'PATCH' ? 'update' : 'delete'}`;
      const byId = method === 'GET' ? 'get-customer' : `${suffix.slice(1)}-customer`;
      expect(target(method, `/v1/customers/${id}`)).toEqual([byId, { id }]);
      expect(target(method, `/v1/customers/${id}/`)).toEqual([byId, { id, proxy: '' }]);
      expect(target(method, '/v1/customers/external/crm-1')).toEqual([
        `${byId}-external`,
        { external_id: 'crm-1' },
      ]);
      expect(target(method, '/v1/customers/external/crm-1/')).toEqual([
        `${byId}-external`,
        { external_id: 'crm-1', proxy: '' },
      ]);
      // An encoded slash stays inside the one segment it was sent in.
      expect(target(method, '/v1/customers/external/a%2Fb%20c')).toEqual([
        `${byId}-external`,
        { external_id: 'a/b c' },
      ]);
      // Real extra segments: the external twin, which answers the route-level 404.
      expect(target(method, '/v1/customers/external/a/b')).toEqual([
        `${byId}-external`,
        { external_id: 'a', proxy: 'b' },
      ]);
      // No external id: the {id} route, whose function answers the 404 of an unknown customer.
      expect(target(method, '/v1/customers/external')).toEqual([byId, { id: 'external' }]);
      expect(target(method, '/v1/customers/external/')).toEqual([byId, { id: 'external', proxy: '' }]);
    }
    // The state routes: `/v1/customers/external/state` is the external id `state` (a literal before a variable).
    expect(target('GET', `/v1/customers/${id}/state`)).toEqual(['get-customer-state', { id }]);
    expect(target('GET', `/v1/customers/${id}/state/`)).toEqual(['get-customer-state', { id, proxy: '' }]);
    expect(target('GET', '/v1/customers/external/crm-1/state')).toEqual([
      'get-customer-state-external',
      { external_id: 'crm-1' },
    ]);
    expect(target('GET', '/v1/customers/external/state')).toEqual([
      'get-customer-external',
      { external_id: 'state' },
    ]);
    expect(target('GET', '/v1/customers/external/state/state')).toEqual([
      'get-customer-state-external',
      { external_id: 'state' },
    ]);
    expect(shadowedVariables(operations.map((operation) => operation.path))).toEqual(
      new Map([
        ['/v1/customers/{id}', { id: ['external'] }],
        ['/v1/customers/{id}/state', { id: ['external'] }],
        // Get Event's id is a UUID: `ingest` and `names` are never one (a GET of either is its route).
        ['/v1/events/{id}', { id: ['ingest', 'names'] }],
      ]),
    );
  });

  it('sends unknown paths and other methods to the $default function, which knows which is which', () => {
    for (const [method, path] of [
      ['GET', '/v1/nope'],
      ['GET', '/'],
      ['PUT', '/v1/subscriptions/'],
      ['POST', '/v1/customer-portal/wallets'],
      ['PUT', `/v1/webhooks/endpoints/${webhookId}`],
      ['GET', '/v1/webhooks'],
    ] as const) {
      expect(routeRequest(method, path)).toEqual({
        target: routeNotFound,
        routeKey: '$default',
        pathParameters: {},
      });
    }
    expect(methodsForPath(operations, '/v1/subscriptions/')).toEqual(['GET', 'POST']);
    expect(methodsForPath(operations, '/v1/subscriptions')).toEqual(['GET', 'POST']);
    expect(methodsForPath(operations, `/v1/webhooks/endpoints/${webhookId}/`)).toEqual([
      'DELETE',
      'GET',
      'PATCH',
    ]);
    expect(methodsForPath(operations, `/v1/webhooks/endpoints/${webhookId}/secret`)).toEqual(['PATCH']);
    expect(methodsForPath(operations, '/v1/webhooks/endpoints')).toEqual(['GET', 'POST']);
    expect(methodsForPath(operations, '/v1/nope')).toEqual([]);
  });

  it('treats the method case-insensitively', () => {
    expect(routeRequest('get', '/v1/customer-portal/wallets/')).toMatchObject({
      target: { name: 'list-wallets' },
    });
  });

  it('prefers an exact route, then literal segments over path variables, then greedy, then ANY', () => {
    const routes = [
      route('GET /pets/{proxy+}', 'greedy'),
      route('GET /pets/{id}', 'variable'),
      route('GET /pets/dog', 'literal'),
      route('ANY /pets/cat', 'any'),
      route('GET /pets/{id}/toys/{proxy+}', 'nested-greedy'),
    ];
    const pick = (method: string, path: string) => selectRoute(routes, method, path)?.route.target.name;
    expect(pick('GET', '/pets/dog')).toBe('literal');
    expect(pick('GET', '/pets/7')).toBe('variable');
    expect(pick('GET', '/pets/7/8')).toBe('greedy');
    expect(pick('GET', '/pets/')).toBe('greedy');
    expect(pick('GET', '/pets')).toBeUndefined();
    expect(pick('POST', '/pets/cat')).toBe('any');
    expect(pick('GET', '/pets/7/toys/a/b')).toBe('nested-greedy');
    expect(pick('DELETE', '/pets/dog')).toBeUndefined();
  });

  it('without a $default route, leaves a request unrouted (API Gateway answers its own 404)', () => {
    expect(routeRequest('GET', '/v1/nope', stackRoutes, null)).toBeUndefined();
  });
});

describe('toApiGatewayEvent', () => {
  it('builds a payload 2.0 event like an HTTP API', () => {
    const now = Date.UTC(2026, 10, 22, 8, 0, 0, 123);
    const event = toApiGatewayEvent(
      fakeRequest('DELETE', `/v1/webhooks/endpoints/${webhookId}`, [
        'Authorization',
        'Bearer polar_pat_x',
        'User-Agent',
        'curl/8',
        'Polar-Version',
        '2025',
      ]),
      Buffer.alloc(0),
      {
        routeKey: 'DELETE /v1/webhooks/endpoints/{id}',
        pathParameters: { id: webhookId },
        requestId: 'abc=',
        now,
      },
    );
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'DELETE /v1/webhooks/endpoints/{id}',
      rawPath: `/v1/webhooks/endpoints/${webhookId}`,
      rawQueryString: '',
      headers: {
        host: '127.0.0.1:3000',
        authorization: 'Bearer polar_pat_x',
        'user-agent': 'curl/8',
        'polar-version': '2025',
        'x-forwarded-for': '127.0.0.1',
        'x-forwarded-proto': 'http',
      },
      pathParameters: { id: webhookId },
      isBase64Encoded: false,
      requestContext: {
        accountId: '123456789012',
        domainName: '127.0.0.1:3000',
        domainPrefix: '127',
        http: {
          method: 'DELETE',
          path: `/v1/webhooks/endpoints/${webhookId}`,
          protocol: 'HTTP/1.1',
          sourceIp: '127.0.0.1',
          userAgent: 'curl/8',
        },
        requestId: 'abc=',
        routeKey: 'DELETE /v1/webhooks/endpoints/{id}',
        stage: '$default',
        time: '22/Nov/2026:08:00:00 +0000',
        timeEpoch: now,
      },
    });
    expect(event.requestContext.apiId).toMatch(/^[a-z0-9]+$/);
    expect(event.headers['x-amzn-trace-id']).toMatch(/^Root=1-[0-9a-f]{8}-[0-9a-f]{24}$/);
    // Absent rather than null or empty, as API Gateway sends them.
    expect(event).not.toHaveProperty('body');
    expect(event).not.toHaveProperty('queryStringParameters');
    expect(event).not.toHaveProperty('cookies');
  });

  it('joins repeated query keys with commas and decodes values; rawQueryString stays raw', () => {
    const url = '/v1/customer-portal/wallets/?sorting=balance&sorting=-created_at&page=2&q=a%20b+c&flag';
    const event = toApiGatewayEvent(fakeRequest('GET', url), Buffer.alloc(0), {
      routeKey: 'GET /v1/customer-portal/wallets/',
    });
    expect(event.rawPath).toBe('/v1/customer-portal/wallets/');
    expect(event.requestContext.http.path).toBe('/v1/customer-portal/wallets/');
    expect(event.rawQueryString).toBe('sorting=balance&sorting=-created_at&page=2&q=a%20b+c&flag');
    expect(event.queryStringParameters).toEqual({
      sorting: 'balance,-created_at',
      page: '2',
      q: 'a b c',
      flag: '',
    });
    expect(event).not.toHaveProperty('pathParameters');
  });

  it('keeps the trailing slash in rawPath', () => {
    const event = toApiGatewayEvent(fakeRequest('GET', '/v1/customer-portal/wallets/'), Buffer.alloc(0), {
      routeKey: 'GET /v1/customer-portal/wallets/',
    });
    expect(event.rawPath).toBe('/v1/customer-portal/wallets/');
  });

  it('lower-cases header names, comma-joins repeats and moves cookies out of headers', () => {
    const event = toApiGatewayEvent(
      fakeRequest('GET', '/v1/customer-portal/wallets', [
        'X-Custom',
        'one',
        'x-custom',
        'two',
        'Accept',
        'application/json',
        'Cookie',
        'a=1; b=2',
        'Connection',
        'keep-alive',
        'X-Forwarded-For',
        '203.0.113.9',
      ]),
      Buffer.alloc(0),
      { routeKey: 'GET /v1/customer-portal/wallets' },
    );
    expect(event.headers['x-custom']).toBe('one,two');
    expect(event.headers.accept).toBe('application/json');
    expect(event.headers).not.toHaveProperty('cookie');
    expect(event.headers).not.toHaveProperty('connection');
    expect(event.headers['x-forwarded-for']).toBe('203.0.113.9, 127.0.0.1');
    expect(event.cookies).toEqual(['a=1', 'b=2']);
    for (const name of Object.keys(event.headers)) expect(name).toBe(name.toLowerCase());
  });

  it('passes JSON bodies as text', () => {
    const body = Buffer.from('{"name":"café ✓"}');
    const event = toApiGatewayEvent(
      fakeRequest('POST', '/v1/oauth2/register', ['Content-Type', 'application/json; charset=utf-8']),
      body,
      { routeKey: 'POST /v1/oauth2/register' },
    );
    expect(event.isBase64Encoded).toBe(false);
    expect(event.body).toBe('{"name":"café ✓"}');
  });

  it('base64-encodes bodies that are not valid UTF-8 or not of a text type', () => {
    const invalidUtf8 = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    expect(encodeRequestBody(invalidUtf8, 'application/json')).toEqual({
      body: invalidUtf8.toString('base64'),
      isBase64Encoded: true,
    });
    const text = Buffer.from('{"a":1}');
    expect(encodeRequestBody(text, undefined)).toEqual({
      body: text.toString('base64'),
      isBase64Encoded: true,
    });
    expect(encodeRequestBody(text, 'application/x-www-form-urlencoded').isBase64Encoded).toBe(true);
    expect(encodeRequestBody(text, 'application/octet-stream').isBase64Encoded).toBe(true);
    expect(encodeRequestBody(text, 'text/plain')).toEqual({ body: '{"a":1}', isBase64Encoded: false });
    expect(encodeRequestBody(Buffer.alloc(0), 'application/json')).toEqual({ isBase64Encoded: false });
  });

  it('formats requestContext.time like API Gateway', () => {
    expect(formatRequestTime(Date.UTC(2020, 2, 12, 19, 3, 58))).toBe('12/Mar/2020:19:03:58 +0000');
  });
});

describe('fromLambdaResult', () => {
  it('passes a structured result through, with cookies and base64 bodies decoded', () => {
    const response = fromLambdaResult({
      statusCode: 201,
      headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', 'X-Count': 3 },
      cookies: ['a=1; Secure', 'b=2'],
      body: Buffer.from('{"ok":true}').toString('base64'),
      isBase64Encoded: true,
    });
    expect(response.statusCode).toBe(201);
    expect(response.headers).toEqual({
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'x-count': '3',
    });
    expect(response.cookies).toEqual(['a=1; Secure', 'b=2']);
    expect(response.body.toString()).toBe('{"ok":true}');
  });

  it('gives a 204 without body an empty body', () => {
    const response = fromLambdaResult({ statusCode: 204 });
    expect(response.statusCode).toBe(204);
    expect(response.body.length).toBe(0);
  });

  it('serialises a non-structured result as a JSON 200', () => {
    expect(fromLambdaResult({ hello: 'world' })).toMatchObject({
      statusCode: 200,
      headers: { 'content-type': 'application/json' },
    });
    expect(fromLambdaResult({ hello: 'world' }).body.toString()).toBe('{"hello":"world"}');
    expect(fromLambdaResult('hi').body.toString()).toBe('"hi"');
    expect(fromLambdaResult([1, 2]).body.toString()).toBe('[1,2]');
  });

  it('rejects malformed structured results, which API Gateway answers with a 500', () => {
    expect(() => fromLambdaResult({ statusCode: 200, body: { not: 'a string' } })).toThrow(
      InvalidLambdaResponseError,
    );
    expect(() => fromLambdaResult({ statusCode: 'abc' })).toThrow(InvalidLambdaResponseError);
  });
});

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function call(
  url: string,
  method: string,
  path: string,
  body?: Buffer | string,
  headers: Record<string, string> = {},
) {
  return new Promise<Reply>((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('startApiServer', () => {
  it('routes, builds events, converts results and answers 404/405/413/500 in JSON', async () => {
    const seen: unknown[] = [];
    const loads: string[] = [];
    const echo: LambdaHandler = async (event, context) => {
      seen.push(event);
      return {
        statusCode: 200,
        headers: { 'content-type': 'application/json' },
        cookies: ['s=1'],
        body: JSON.stringify({ fn: context.functionName, remaining: context.getRemainingTimeInMillis() }),
      };
    };
    const server = await startApiServer({
      port: 0,
      quiet: true,
      loadHandler: async (operation) => {
        loads.push(operation.name);
        if (operation.name === routeNotFound.name) return notFoundHandler as LambdaHandler;
        if (operation.name === 'create-subscription') {
          return async () => {
            throw new Error('boom (expected in this test)');
          };
        }
        if (operation.name === 'create-client') return async () => ({ plain: true });
        return echo;
      },
    });
    try {
      const ok = await call(
        server.url,
        'GET',
        '/v1/customer-portal/wallets/?sorting=balance&sorting=-created_at',
      );
      expect(ok.status).toBe(200);
      expect(ok.headers['set-cookie']).toEqual(['s=1']);
      expect(ok.headers['apigw-requestid']).toBeTruthy();
      const okBody = JSON.parse(ok.body);
      expect(okBody.fn).toBe('list-wallets');
      expect(okBody.remaining).toBeGreaterThan(0);
      expect(seen[0]).toMatchObject({ queryStringParameters: { sorting: 'balance,-created_at' } });

      await call(server.url, 'GET', '/v1/customer-portal/wallets');
      expect(loads.filter((name) => name === 'list-wallets')).toHaveLength(1);

      const plain = await call(server.url, 'POST', '/v1/oauth2/register', '{}', {
        'content-type': 'application/json',
      });
      expect(plain.status).toBe(200);
      expect(plain.headers['content-type']).toBe('application/json');
      expect(JSON.parse(plain.body)).toEqual({ plain: true });

      const missing = await call(server.url, 'GET', '/v1/unknown');
      expect(missing.status).toBe(404);
      expect(missing.headers['content-type']).toBe('application/json');
      expect(JSON.parse(missing.body)).toEqual({ error: 'NotFound', detail: 'Not Found' });

      const wrongMethod = await call(server.url, 'PUT', '/v1/subscriptions');
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers['content-type']).toBe('application/json');
      expect(wrongMethod.headers.allow).toBe('GET, POST');
      expect(JSON.parse(wrongMethod.body)).toEqual({
        error: 'MethodNotAllowed',
        detail: 'Method Not Allowed',
      });

      const crashed = await call(server.url, 'POST', '/v1/subscriptions/', '{}', {
        'content-type': 'application/json',
      });
      expect(crashed.status).toBe(500);
      expect(JSON.parse(crashed.body)).toEqual({
        error: 'InternalServerError',
        detail: 'Internal Server Error',
      });

      const huge = await call(
        server.url,
        'POST',
        '/v1/oauth2/register',
        Buffer.alloc(10 * 1024 * 1024 + 1, 0x20),
        {
          'content-type': 'application/json',
        },
      );
      expect(huge.status).toBe(413);
      expect(JSON.parse(huge.body)).toEqual({ error: 'PayloadTooLarge', detail: 'Request body too large' });

      const deleted = await call(server.url, 'DELETE', `/v1/webhooks/endpoints/${webhookId}/`);
      expect(deleted.status).toBe(200);
      expect(seen.at(-1)).toMatchObject({
        routeKey: 'DELETE /v1/webhooks/endpoints/{id}/{proxy+}',
        pathParameters: { id: webhookId, proxy: '' },
      });
    } finally {
      await server.close();
    }
  });

  it("answers API Gateway's own 404 when there is no $default route", async () => {
    const server = await startApiServer({
      port: 0,
      quiet: true,
      defaultFunction: null,
      loadHandler: async () => async () => ({ statusCode: 200 }),
    });
    try {
      const missing = await call(server.url, 'GET', '/v1/unknown');
      expect(missing.status).toBe(404);
      expect(JSON.parse(missing.body)).toEqual({ message: 'Not Found' });
    } finally {
      await server.close();
    }
  });

  it("answers CORS preflights itself and replaces the function's CORS headers, as the HTTP API does", async () => {
    const server = await startApiServer({
      port: 0,
      quiet: true,
      cors: corsPolicy(['https://shop.example.com']),
      loadHandler: async () => async () => ({
        statusCode: 200,
        headers: {
          'content-type': 'application/json',
          'access-control-allow-origin': 'https://evil.example',
        },
        body: '{}',
      }),
    });
    const preflight = (origin: string, method = 'GET', headers = 'authorization') =>
      call(server.url, 'OPTIONS', '/v1/customer-portal/wallets/', undefined, {
        origin,
        'access-control-request-method': method,
        'access-control-request-headers': headers,
      });
    try {
      const allowed = await preflight('https://shop.example.com');
      expect(allowed.status).toBe(204);
      expect(allowed.headers).toMatchObject({
        'access-control-allow-origin': 'https://shop.example.com',
        'access-control-allow-headers': expect.stringContaining('authorization'),
        'access-control-allow-methods': expect.stringContaining('GET'),
        'access-control-max-age': '86400',
      });
      expect(allowed.headers['access-control-allow-credentials']).toBeUndefined();
      for (const refused of [
        await preflight('https://evil.example'),
        // A method no operation uses.
        await preflight('https://shop.example.com', 'TRACE'),
        await preflight('https://shop.example.com', 'GET', 'authorization, x-secret'),
      ]) {
        expect(refused.status).toBe(204);
        expect(refused.headers['access-control-allow-origin']).toBeUndefined();
      }

      const real = await call(server.url, 'GET', '/v1/customer-portal/wallets/', undefined, {
        origin: 'https://shop.example.com',
      });
      expect(real.headers['access-control-allow-origin']).toBe('https://shop.example.com');
      expect(real.headers['access-control-expose-headers']).toBe('retry-after,www-authenticate');
      expect(real.headers.vary).toMatch(/origin/i);
      const foreign = await call(server.url, 'GET', '/v1/customer-portal/wallets/', undefined, {
        origin: 'https://evil.example',
      });
      expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
      const sameOrigin = await call(server.url, 'GET', '/v1/customer-portal/wallets/');
      expect(sameOrigin.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await server.close();
    }
  });
});
