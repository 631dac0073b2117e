import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  encodeRequestBody,
  formatRequestTime,
  fromLambdaResult,
  InvalidLambdaResponseError,
  matchRoute,
  type RequestLike,
  toApiGatewayEvent,
} from '../../scripts/local/apigw.ts';
import { type LambdaHandler, startApiServer } from '../../scripts/local/server.ts';
import { operations } from '../../shared/operations.ts';

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

describe('matchRoute', () => {
  it('matches both spellings of every route in the route table', () => {
    for (const operation of operations) {
      for (const template of operation.paths) {
        const path = template.replace('{id}', webhookId);
        const match = matchRoute(operation.method, path, operations);
        expect(match).toMatchObject({
          operation: { name: operation.name },
          routeKey: `${operation.method} ${template}`,
        });
      }
    }
  });

  it('extracts {id} from exactly one segment, decoded', () => {
    expect(matchRoute('DELETE', `/v1/webhooks/endpoints/${webhookId}`, operations)).toMatchObject({
      routeKey: 'DELETE /v1/webhooks/endpoints/{id}',
      pathParameters: { id: webhookId },
    });
    expect(matchRoute('DELETE', `/v1/webhooks/endpoints/${webhookId}/`, operations)).toMatchObject({
      routeKey: 'DELETE /v1/webhooks/endpoints/{id}/',
      pathParameters: { id: webhookId },
    });
    expect(matchRoute('DELETE', '/v1/webhooks/endpoints/a%20b', operations)).toMatchObject({
      pathParameters: { id: 'a b' },
    });
    expect(matchRoute('DELETE', '/v1/webhooks/endpoints/a/b', operations)).toEqual({ status: 404 });
    expect(matchRoute('DELETE', '/v1/webhooks/endpoints/', operations)).toEqual({ status: 404 });
    expect(matchRoute('DELETE', '/v1/webhooks/endpoints//', operations)).toEqual({ status: 404 });
  });

  it('answers 404 for unknown paths and 405 for a known path with another method', () => {
    expect(matchRoute('GET', '/v1/nope', operations)).toEqual({ status: 404 });
    expect(matchRoute('GET', '/', operations)).toEqual({ status: 404 });
    expect(matchRoute('GET', '/v1/subscriptions/', operations)).toEqual({ status: 405 });
    expect(matchRoute('POST', '/v1/customer-portal/wallets', operations)).toEqual({ status: 405 });
    expect(matchRoute('GET', `/v1/webhooks/endpoints/${webhookId}`, operations)).toEqual({ status: 405 });
  });

  it('treats the method case-insensitively', () => {
    expect(matchRoute('get', '/v1/customer-portal/wallets/', operations)).toMatchObject({
      operation: { name: 'list-wallets' },
    });
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
        routeKey: 'DELETE /v1/webhooks/endpoints/{id}/',
        pathParameters: { id: webhookId },
      });
    } finally {
      await server.close();
    }
  });
});
