import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { observed } from '#shared/observability/observed.ts';

const event = (routeKey: string) =>
  ({
    routeKey,
    requestContext: { requestId: `req-${routeKey}`, http: { method: routeKey.split(' ')[0] } },
  }) as unknown as APIGatewayProxyEventV2;
const context = { awsRequestId: 'aws-1' } as Context;

/** The request lines a call writes. */
async function linesOf(call: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((text: unknown) => {
    lines.push(JSON.parse(String(text)));
  });
  try {
    await call();
  } finally {
    log.mockRestore();
  }
  return lines.filter((line) => line.message === 'request');
}

afterEach(() => vi.restoreAllMocks());

describe('observed', () => {
  it("reports each handler's first request as its cold start, also with several handlers in one process (npm start)", async () => {
    const ok = async () => ({ statusCode: 200, body: '{}' });
    const listProducts = observed(ok);
    const getProduct = observed(ok);
    const lines = await linesOf(async () => {
      await listProducts(event('GET /v1/products'), context);
      await getProduct(event('GET /v1/products/{id}'), context);
      await listProducts(event('GET /v1/products'), context);
      await getProduct(event('GET /v1/products/{id}'), context);
    });
    expect(lines.map((line) => [line.operation, line.cold_start, line.ColdStarts])).toEqual([
      ['list-products', true, 1],
      ['get-product', true, 1],
      ['list-products', false, 0],
      ['get-product', false, 0],
    ]);
  });
});
