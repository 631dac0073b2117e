/**
 * Deliveries are signed so that every verifier integrators use accepts them: `@polar-sh/sdk` 1.x and
 * 0.49 `validateEvent`, and the stock Standard Webhooks library, each given the secret exactly as the
 * API returned it (or, for the stock library with a legacy secret, as the hosted service's docs say).
 */
import { randomBytes } from 'node:crypto';
import { webhooks } from '@polar-sh/sdk/2026-10';
import { validateEvent as validateV0 } from 'polar-sdk-v0/webhooks';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import type { CustomerRecord } from '#shared/data/records.ts';
import { deliveryHeaders, signatureHeader, signingKeys } from '#shared/domain/webhook-signature.ts';
import { presentCustomer } from '#shared/services/presenters.ts';

const specSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const legacySecret = `polar_whs_${'k'.repeat(40)}`;

const customer: CustomerRecord = {
  id: '0f8fad5b-d9cb-469f-a165-70867728950e',
  organization_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
  created_at: '2026-11-24T10:00:00.000Z',
  modified_at: null,
  metadata: { plan: 'pro' },
  external_id: 'crm-1',
  email: 'ada@example.com',
  email_verified: false,
  type: 'individual',
  name: 'Ada',
  billing_name: null,
  billing_address: null,
  tax_id: null,
  locale: null,
  deleted_at: null,
  wallet_count: 0,
};
/** The envelope the API sends: the event type, when, and the same JSON the API returns for the object. */
const payload = JSON.stringify({
  type: 'customer.created',
  timestamp: '2026-11-24T10:00:01.000Z',
  data: presentCustomer(customer),
});
const now = () => Math.floor(Date.now() / 1000);
const message = (timestamp = now()) => ({ id: 'a6d0e8b2-5f1c-4c1e-9a7e-3b0f1d2c4e5a', timestamp, payload });

async function verdicts(body: string, headers: Record<string, string>, secret: string) {
  const settle = async (check: () => unknown) => {
    try {
      await check();
      return 'ok';
    } catch (error) {
      return (error as Error).name;
    }
  };
  // The stock library takes a `whsec_<base64>` secret; a legacy secret is handed over base64-encoded.
  const stock = secret.startsWith('whsec_') ? secret : Buffer.from(secret).toString('base64');
  return {
    v1: await settle(() => webhooks.validateEvent(body, headers, secret)),
    v0: await settle(() => validateV0(body, headers, secret)),
    standardwebhooks: await settle(() => new Webhook(stock).verify(body, headers)),
  };
}

const allOk = { v1: 'ok', v0: 'ok', standardwebhooks: 'ok' };

describe('Standard Webhooks signatures', () => {
  it('a spec-form secret: all three verifiers accept the delivery', async () => {
    const secret = specSecret();
    const headers = deliveryHeaders(message(), [secret]);
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(await verdicts(payload, headers, secret)).toEqual(allOk);
  });

  it('a legacy secret (no base64 after a prefix): all three accept it too', async () => {
    const headers = deliveryHeaders(message(), [legacySecret]);
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(1);
    expect(await verdicts(payload, headers, legacySecret)).toEqual(allOk);
  });

  it('each key on its own: the spec key satisfies v1 and the stock library, the legacy key v1 and v0', async () => {
    const secret = specSecret();
    const [spec, legacy] = signingKeys(secret) as [Buffer, Buffer];
    expect(spec).toEqual(Buffer.from(secret.slice(6), 'base64'));
    expect(legacy).toEqual(Buffer.from(secret, 'utf8'));
    const headers = deliveryHeaders(message(), [secret]);
    const [specSignature, legacySignature] = String(headers['webhook-signature']).split(' ') as [
      string,
      string,
    ];
    const only = (signature: string) => ({ ...headers, 'webhook-signature': signature });
    expect(await verdicts(payload, only(specSignature), secret)).toMatchObject({
      v1: 'ok',
      standardwebhooks: 'ok',
    });
    expect((await verdicts(payload, only(specSignature), secret)).v0).not.toBe('ok');
    expect(await verdicts(payload, only(legacySignature), secret)).toMatchObject({ v1: 'ok', v0: 'ok' });
    expect((await verdicts(payload, only(legacySignature), secret)).standardwebhooks).not.toBe('ok');
  });

  it('during a secret reset both secrets sign: a receiver with either verifies', async () => {
    const [before, after] = [specSecret(), specSecret()];
    const headers = deliveryHeaders(message(), [after, before]);
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(4);
    expect(await verdicts(payload, headers, before)).toEqual(allOk);
    expect(await verdicts(payload, headers, after)).toEqual(allOk);
  });

  it('a changed byte, another secret, another id or a stale timestamp: every verifier refuses', async () => {
    const secret = specSecret();
    const headers = deliveryHeaders(message(), [secret]);
    const refusedByAll = (v: Record<string, string>) => Object.values(v).every((verdict) => verdict !== 'ok');
    expect(refusedByAll(await verdicts(payload.replace('Ada', 'Eve'), headers, secret))).toBe(true);
    expect(refusedByAll(await verdicts(payload, headers, specSecret()))).toBe(true);
    expect(refusedByAll(await verdicts(payload, { ...headers, 'webhook-id': 'another' }, secret))).toBe(true);
    const stale = deliveryHeaders(message(now() - 3600), [secret]);
    expect(refusedByAll(await verdicts(payload, stale, secret))).toBe(true);
  });

  it('refuses to sign what the format cannot carry', () => {
    expect(() => signatureHeader({ id: 'a.b', timestamp: 1, payload }, [legacySecret])).toThrow(RangeError);
    expect(() => signatureHeader({ id: 'a', timestamp: 1.5, payload }, [legacySecret])).toThrow(RangeError);
    expect(() => signatureHeader({ id: 'a', timestamp: 1, payload }, [])).toThrow(RangeError);
  });
});
