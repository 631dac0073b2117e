/**
 * The request quotas as `npm start` serves them (LocalStackOptions.quotas, here small so that a test
 * reaches them), read by both official clients: a spent quota is a 429 with `Retry-After` and the
 * documented body, which @polar-sh/sdk 1.x surfaces as `PolarRateLimitError` (a `PolarClientError`, status 429, `retryAfter`) and 0.49 as
 * `SDKError` (status 429, headers kept).
 */
import { PolarClientError, PolarRateLimitError } from '@polar-sh/sdk';
import { createPolar } from '@polar-sh/sdk/2026-10';
import { Polar } from 'polar-sdk-v0';
import { SDKError } from 'polar-sdk-v0/models/errors/sdkerror.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalStack } from '#scripts/local/stack.ts';
import type { QuotaSettings } from '#shared/domain/limits.ts';
import { expectDocumented } from '../support/contract.ts';
import { SDK_TIMEOUT_SECONDS, startLocalApi } from '../support/local-api.ts';

const rule = { limit: 3, windowSeconds: 3600, shards: 1, lease: 1 };
const QUOTAS: QuotaSettings = {
  credential: rule,
  tenant: { ...rule, limit: 1000 },
  oauthClient: rule,
  address: rule,
};

let stack: LocalStack;
beforeAll(async () => {
  stack = await startLocalApi('quotas', { quotas: QUOTAS, webhooks: false });
});
afterAll(() => stack?.stop());

async function failure(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('the call resolved, a rejection was expected');
}

describe('a spent quota through the official clients', () => {
  it('over HTTP: 429, Retry-After, the documented body', async () => {
    const { base_url: base, personal_access_token: token } = stack.demo;
    const get = () =>
      fetch(`${base}/v1/products/${stack.demo.free_product_id}`, {
        headers: { authorization: `Bearer ${token}` },
      });
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let n = 0; n < 5; n++) {
      last = await get();
      statuses.push(last.status);
    }
    expect(statuses.slice(0, 3).every((status) => status === 200)).toBe(true);
    expect(statuses.slice(3)).toEqual([429, 429]);
    const reply = last as Response;
    const text = await reply.text();
    expectDocumented('getProduct', { status: 429, headers: reply.headers, body: JSON.parse(text), text });
    expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('@polar-sh/sdk 1.x: PolarRateLimitError (a PolarClientError) with status 429 and retryAfter; 0.49: SDKError with status 429 and Retry-After', async () => {
    const token = stack.demo.personal_access_token;
    const v1 = createPolar({
      baseUrl: stack.demo.base_url,
      accessToken: token,
      timeout: SDK_TIMEOUT_SECONDS,
    });
    const error = await failure(() => v1.products.get(stack.demo.free_product_id));
    expect(error, String((error as Error).stack)).toBeInstanceOf(PolarRateLimitError);
    expect(error).toBeInstanceOf(PolarClientError);
    expect((error as PolarRateLimitError).statusCode).toBe(429);
    expect((error as PolarRateLimitError).retryAfter).toBeGreaterThan(0);

    const v0 = new Polar({ accessToken: token, serverURL: stack.demo.base_url });
    const old = (await failure(() => v0.products.get({ id: stack.demo.free_product_id }))) as SDKError;
    expect(old).toBeInstanceOf(SDKError);
    expect(old.statusCode).toBe(429);
    expect(Number(old.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
