/**
 * The webhook key set's store out of reach: a Secrets Manager that refuses connections (the real
 * client, pointed at a loopback port nothing listens on) is the contract's 503 with `Retry-After` on
 * every webhook-endpoint operation that seals or opens a secret, never a 500; and the next request
 * reads the key set again.
 */
import { createServer } from 'node:net';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsManagerKeyring } from '#shared/data/webhook-keys.ts';
import { ServiceUnavailable } from '#shared/domain/errors.ts';
import { documentedReply } from '../support/contract.ts';
import { createWorld, inProcessApi, type World } from '../support/world.ts';

let world: World;
let refusing: SecretsManagerClient;

beforeAll(async () => {
  world = await createWorld('webhook-key-set');
  // A port that was free a moment ago: connecting to it is refused.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  refusing = new SecretsManagerClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
});
afterAll(async () => {
  refusing?.destroy();
  await world?.drop();
});

describe('Secrets Manager refusing connections', () => {
  it('the keyring rejects with ServiceUnavailable (ECONNREFUSED is transient), and tries again next time', async () => {
    const keyring = secretsManagerKeyring('commerce/webhook-key-set', refusing);
    await expect(keyring()).rejects.toBeInstanceOf(ServiceUnavailable);
    await expect(keyring()).rejects.toBeInstanceOf(ServiceUnavailable);
  });

  it('is the documented 503 with Retry-After on create, list, get, update and reset', async () => {
    const call = inProcessApi((name) => {
      const deps = world.depsFor(name);
      return {
        ...deps,
        webhooks: { ...deps.webhooks, keyring: secretsManagerKeyring('commerce/webhook-key-set', refusing) },
      };
    });
    const token = world.demo.personal_access_token;
    const id = world.demo.webhook_endpoint_ids[0] as string;
    const base = '/v1/webhooks/endpoints';
    const calls: [string, string, string, unknown?][] = [
      [
        'createWebhookEndpoint',
        'POST',
        base,
        { url: 'https://hooks.example.com/k', format: 'raw', events: [] },
      ],
      ['listWebhookEndpoints', 'GET', base],
      ['getWebhookEndpoint', 'GET', `${base}/${id}`],
      ['updateWebhookEndpoint', 'PATCH', `${base}/${id}`, { name: 'renamed while the key set is away' }],
      ['resetWebhookEndpointSecret', 'PATCH', `${base}/${id}/secret`],
    ];
    for (const [operationId, method, url, body] of calls) {
      const reply = documentedReply(
        operationId,
        await call(method, url, { token, ...(body === undefined ? {} : { body }) }),
      );
      expect(reply.status, operationId).toBe(503);
      expect(reply.body, operationId).toEqual({ error: 'ServiceUnavailable', detail: expect.any(String) });
      expect(reply.headers['retry-after'], operationId).toMatch(/^\d+$/);
    }
  });
});
