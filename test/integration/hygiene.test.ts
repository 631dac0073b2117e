/**
 * Secrets hygiene: after the demo seed and a run of every operation (successes,
 * refusals, a 503 and a 500 included), neither the table nor anything logged
 * holds a plaintext token, client secret or webhook signing secret, and no
 * answer carries one except the registration that returns its own client
 * secret. Expired and revoked credentials are refused by every operation.
 */
// On a DynamoDB Local of its own: it reads its table's stream (test/support/private-engine.ts).

import { inspect } from 'node:util';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  addMember,
  createCustomerSession,
  createPersonalAccessToken,
  createUser,
  createWebhookEndpoint,
  listPersonalAccessTokensOf,
  PAT_DEFAULT_TTL_DAYS,
} from '#scripts/admin/commands.ts';
import { getCustomer } from '#shared/data/catalog.ts';
import { keys } from '#shared/data/table.ts';
import { findToken } from '#shared/data/tokens.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { hashSecret, WEBHOOK_SECRET_PLACEHOLDER } from '#shared/domain/secrets.ts';
import { faultyApi } from '../support/faults.ts';
import {
  clientRequest,
  expireItem,
  issueTokens,
  pkce,
  REDIRECT_URI,
  registerClient,
  tokenRequest,
} from '../support/oauth.ts';
import { loopbackEndpoint, startTestPipeline, type TestPipeline } from '../support/pipeline.ts';
import { usePrivateEngine } from '../support/private-engine.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { canonical, digestChanges, scanTable, tableDigest } from '../support/table-state.ts';
import { waitFor } from '../support/wait.ts';
import { createWorld, type Reply, type World, worldIdTokenPrivateKey } from '../support/world.ts';

usePrivateEngine();

const SECRET_SHAPE = /polar_(?:pat|cst|cs|whs|crt|ac|at_[uo]|rt_[uo])_|whsec_/;
const CONSOLE = ['log', 'error', 'warn', 'info', 'debug'] as const;

let world: World;
const logged: string[] = [];
const spies: { mockRestore(): void }[] = [];
/** Every secret issued during the test, as issued. */
const secrets = new Set<string>();
/**
 * Values sent only inside request bodies (metadata values, a name, an e-mail address): the webhook
 * payloads carry them to receivers, no log line may.
 */
const BODY_VALUES = ['metadata-value-7c1e93', 'Body Marker Ada', 'body-marker-5a0d@x.example'] as const;
let pipeline: TestPipeline;
/** Receivers of the pipeline's deliveries: one answers 204, one 500 (its attempts are retried). */
const receivers: Receiver[] = [];

beforeAll(async () => {
  for (const method of CONSOLE) {
    spies.push(
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
        logged.push(
          args.map((arg) => (typeof arg === 'string' ? arg : inspect(arg, { depth: 8 }))).join(' '),
        );
      }),
    );
  }
  world = await createWorld('hygiene');
  // The webhook pipeline runs beside the operations: its relay's and deliverer's lines are scanned too.
  pipeline = await startTestPipeline(world);
  for (const status of [204, 500]) {
    const receiver = await startReceiver(() => status);
    receivers.push(receiver);
    const { secret } = await loopbackEndpoint(world, receiver.url, [
      'customer.created',
      'subscription.created',
      'subscription.updated',
    ]);
    secrets.add(secret);
  }
  const { demo } = world;
  for (const token of [
    demo.personal_access_token,
    demo.personal_access_token_without_scopes,
    demo.customer_session_token,
    demo.expired_customer_session_token,
    demo.second_customer_session_token,
    demo.large_customer_session_token,
    demo.other_organization.personal_access_token,
  ]) {
    secrets.add(token);
  }
});
afterAll(async () => {
  for (const spy of spies) spy.mockRestore();
  await world?.drop();
});

/**
 * The ID Token signing key's private material, as it could leak: the private JWK members (RFC 7518
 * §6.3.2) and the PKCS #8 document in base64. Deployed, the key never leaves KMS; here it is the
 * world's in-process key, and no table item, log line or answer (the JWKS included) may hold it.
 */
const privateJwk = worldIdTokenPrivateKey.export({ format: 'jwk' }) as Record<string, string>;
const ID_TOKEN_KEY_MATERIAL = [
  ...['d', 'p', 'q', 'dp', 'dq', 'qi'].map((member) => privateJwk[member] as string),
  (worldIdTokenPrivateKey.export({ format: 'der', type: 'pkcs8' }) as Buffer)
    .toString('base64')
    .slice(40, 120),
];

/** The random part too: a secret stored or logged without its prefix is still a leak. */
function leaks(text: string): string[] {
  const found: string[] = [];
  for (const material of ID_TOKEN_KEY_MATERIAL) {
    if (text.includes(material)) found.push(`ID Token signing key material ${material.slice(0, 6)}…`);
  }
  if (SECRET_SHAPE.test(text)) found.push(`secret-shaped text: …${text.match(SECRET_SHAPE)?.[0]}…`);
  for (const secret of secrets) {
    const random = secret.replace(/^(?:polar_[a-z]+|whsec)_/, '');
    if (text.includes(random)) found.push(`${secret.slice(0, 14)}…`);
  }
  return found;
}

describe('secrets never reach the table, the logs or other answers', () => {
  // Stopped before the next suite, which needs a table no retry writes to.
  afterAll(async () => {
    await pipeline?.stop();
    await Promise.all(receivers.map((receiver) => receiver.close()));
  });
  /** Each answer, with the secrets it exists to hand out (a registration's, a code, tokens). */
  const answers: { label: string; reply: Reply; returns?: string[] }[] = [];
  const record = (label: string, reply: Reply, ...returns: (string | undefined)[]) => {
    const handed = returns.filter((secret): secret is string => secret !== undefined);
    answers.push({ label, reply, ...(handed.length > 0 ? { returns: handed } : {}) });
    return reply;
  };

  it('runs every operation: successes, refusals, a 503 and a 500', async () => {
    const { demo, admin } = world;
    const pat = demo.personal_access_token;

    // Webhook signing secrets, issued by the operator CLI code.
    for (const format of ['raw', 'slack'] as const) {
      const { secret } = await createWebhookEndpoint(admin, {
        organizationId: demo.organization_id,
        url: 'https://hooks.example/hygiene',
        format,
      });
      expect(secret).toMatch(/^whsec_/);
      secrets.add(secret);
    }
    // Through the API: create, read, list and reset; each answer carries only its own endpoint's secret.
    const created = await world.call('POST', '/v1/webhooks/endpoints', {
      token: pat,
      body: { url: 'https://hooks.example/hygiene-api', format: 'raw', events: ['customer.created'] },
    });
    expect(created.status).toBe(201);
    secrets.add(created.body.secret);
    record('create endpoint', created, created.body.secret);
    const endpointUrl = `/v1/webhooks/endpoints/${created.body.id}`;
    record('get endpoint', await world.call('GET', endpointUrl, { token: pat }), created.body.secret);
    const reset = await world.call('PATCH', `${endpointUrl}/secret`, { token: pat });
    expect(reset.status).toBe(200);
    secrets.add(reset.body.secret);
    record('reset endpoint secret', reset, reset.body.secret);
    record(
      'refused endpoint',
      await world.call('POST', '/v1/webhooks/endpoints', {
        token: pat,
        body: { url: 'https://10.0.0.1/', format: 'raw', events: [] },
      }),
    );
    // More tokens: a second user's PAT, a fresh session.
    const user = await createUser(admin, { email: 'hygiene@x.example' });
    await addMember(admin, demo.organization_id, user.id);
    const userPat = await createPersonalAccessToken(admin, { userId: user.id, scope: ALL_SCOPES.join(' ') });
    secrets.add(userPat.token);
    // A webhooks:read credential reads the endpoints with the placeholder, never a signing secret.
    const readerPat = await createPersonalAccessToken(admin, { userId: user.id, scope: 'webhooks:read' });
    secrets.add(readerPat.token);
    const readerGet = record(
      'reader get endpoint',
      await world.call('GET', endpointUrl, { token: readerPat.token }),
    );
    expect(readerGet.body.secret).toBe(WEBHOOK_SECRET_PLACEHOLDER);
    const readerList = record(
      'reader list endpoints',
      await world.call('GET', '/v1/webhooks/endpoints?limit=100', { token: readerPat.token }),
    );
    expect(readerList.body.items.length).toBeGreaterThanOrEqual(3);
    for (const item of readerList.body.items) expect(item.secret).toBe(WEBHOOK_SECRET_PLACEHOLDER);
    const customer = await getCustomer(world.table, demo.customer_id);
    if (!customer) throw new Error('demo data incomplete');
    const session = await createCustomerSession(admin, { customer });
    secrets.add(session.token);

    for (const [i, method] of ['client_secret_post', 'client_secret_basic', 'none'].entries()) {
      const reply = record(
        `register ${method}`,
        await world.call('POST', '/v1/oauth2/register', {
          token: i === 0 ? pat : userPat.token,
          body: {
            redirect_uris: ['https://app.example/cb'],
            client_name: `hygiene ${method}`,
            token_endpoint_auth_method: method,
          },
        }),
      );
      expect(reply.status).toBe(201);
      secrets.add(reply.body.registration_access_token);
      if (method !== 'none') {
        expect(reply.body.client_secret).toMatch(/^polar_cs_/);
        secrets.add(reply.body.client_secret);
      }
      answers[answers.length - 1] = {
        label: `register ${method}`,
        reply,
        returns: [reply.body.registration_access_token, reply.body.client_secret].filter(Boolean),
      };
    }
    // A registration replayed with an Idempotency-Key: its stored answer holds a client secret.
    const keyed = await world.call('POST', '/v1/oauth2/register', {
      token: pat,
      headers: { 'idempotency-key': 'hygiene-1' },
      body: { redirect_uris: ['https://app.example/cb'], client_name: 'keyed' },
    });
    expect(keyed.status).toBe(201);
    secrets.add(keyed.body.client_secret);
    secrets.add(keyed.body.registration_access_token);
    record(
      'register with Idempotency-Key',
      keyed,
      keyed.body.client_secret,
      keyed.body.registration_access_token,
    );

    // The OAuth flow: a code, tokens, a refresh (rotation), a replay, revocation, introspection, the
    // tokens on the API; every code and token issued is a secret the table and logs must not hold.
    const client = await registerClient(world.call, pat, {
      token_endpoint_auth_method: 'client_secret_post',
    });
    secrets.add(client.client_secret as string);
    secrets.add(client.registration_access_token);
    const { verifier, challenge } = pkce();
    const consented = record(
      'consent',
      await world.call('POST', '/v1/oauth2/consent', {
        token: pat,
        body: {
          action: 'allow',
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: REDIRECT_URI,
          scope: 'openid email products:read',
          code_challenge: challenge,
          code_challenge_method: 'S256',
        },
      }),
    );
    const code = new URL(consented.headers.location as string).searchParams.get('code') as string;
    secrets.add(code);
    answers[answers.length - 1] = { label: 'consent', reply: consented, returns: [code] };
    const exchange = {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT_URI,
    };
    const issued = await tokenRequest(world.call, client, exchange);
    expect(issued.status).toBe(200);
    secrets.add(issued.body.access_token);
    secrets.add(issued.body.refresh_token);
    record('code exchange', issued, issued.body.access_token, issued.body.refresh_token);
    // The grant has openid: the answer carries an ID Token, signed with the key scanned for below.
    expect(issued.body.id_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    record('JWKS', await world.call('GET', '/.well-known/jwks.json'));
    record('OpenID configuration', await world.call('GET', '/.well-known/openid-configuration'));
    record('code used twice', await tokenRequest(world.call, client, exchange));
    const refreshed = await tokenRequest(world.call, client, {
      grant_type: 'refresh_token',
      refresh_token: issued.body.refresh_token,
    });
    expect(refreshed.status).toBe(200);
    secrets.add(refreshed.body.access_token);
    secrets.add(refreshed.body.refresh_token);
    record('refresh', refreshed, refreshed.body.access_token, refreshed.body.refresh_token);
    record(
      'product with an OAuth token',
      await world.call('GET', `/v1/products/${demo.free_product_id}`, { token: refreshed.body.access_token }),
    );
    record(
      'userinfo',
      await world.call('GET', '/v1/oauth2/userinfo', { token: refreshed.body.access_token }),
    );
    record(
      'introspect',
      await world.call(
        'POST',
        '/v1/oauth2/introspect',
        clientRequest(client, { token: refreshed.body.access_token }),
      ),
    );
    record(
      'replay',
      await tokenRequest(world.call, client, {
        grant_type: 'refresh_token',
        refresh_token: issued.body.refresh_token,
      }),
    );
    record(
      'revoke',
      await world.call(
        'POST',
        '/v1/oauth2/revoke',
        clientRequest(client, { token: refreshed.body.refresh_token }),
      ),
    );
    record(
      'revoked token on the API',
      await world.call('GET', `/v1/products/${demo.free_product_id}`, { token: refreshed.body.access_token }),
    );
    const unknownAccess = `polar_at_o_${'Q'.repeat(48)}_${client.client_id.slice('polar_ci_'.length)}`;
    secrets.add(unknownAccess);
    record(
      'unknown OAuth token',
      await world.call('GET', `/v1/products/${demo.free_product_id}`, { token: unknownAccess }),
    );
    record(
      'wrong client secret',
      await world.call(
        'POST',
        '/v1/oauth2/token',
        clientRequest({ ...client, client_secret: `polar_cs_${'W'.repeat(48)}` }, exchange),
      ),
    );

    const subscribe = (token: string, body: unknown) =>
      world.call('POST', '/v1/subscriptions/', { token, body });
    const good = { product_id: demo.free_product_id, customer_id: demo.customer_id, metadata: { note: 'x' } };
    expect(record('subscribe', await subscribe(pat, good)).status).toBe(201);
    // Values only bodies hold, through a customer and a subscription (and so their webhook events).
    const [metadataValue, name, email] = BODY_VALUES;
    const marked = record(
      'create customer with marked values',
      await world.call('POST', '/v1/customers/', {
        token: pat,
        body: { email, name, metadata: { source: metadataValue } },
      }),
    );
    expect(marked.status).toBe(201);
    expect(
      record(
        'subscribe with a marked metadata value',
        await subscribe(pat, { ...good, customer_id: marked.body.id, metadata: { note: metadataValue } }),
      ).status,
    ).toBe(201);
    expect(record('subscribe as second user', await subscribe(userPat.token, good)).status).toBe(201);
    record('subscribe paid', await subscribe(pat, { ...good, product_id: demo.paid_product_id }));
    // Usage events: an ingest, a list, a read and the names; their answers and lines are scanned too.
    const usage = {
      name: 'hygiene',
      customer_id: demo.customer_id,
      external_id: 'hygiene-1',
      metadata: { note: 'x' },
    };
    const ingest = (token: string) =>
      world.call('POST', '/v1/events/ingest', { token, body: { events: [usage] } });
    expect(record('ingest events', await ingest(pat)).status).toBe(200);
    expect(record('ingest events again (a duplicate)', await ingest(pat)).body).toEqual({
      inserted: 0,
      duplicates: 1,
    });
    const listedEvents = record(
      'list events',
      await world.call('GET', '/v1/events/?start_timestamp=2000-01-01T00:00:00Z', { token: pat }),
    );
    expect(listedEvents.status).toBe(200);
    const eventId = listedEvents.body.items[0].id as string;
    expect(record('get event', await world.call('GET', `/v1/events/${eventId}`, { token: pat })).status).toBe(
      200,
    );
    expect(
      record('list event names', await world.call('GET', '/v1/events/names', { token: pat })).status,
    ).toBe(200);
    // A token pasted into the body: refused, echoed to its sender (the 422's input), stored nowhere.
    const pasted = await subscribe(pat, { ...good, metadata: { [pat]: pat } });
    expect(pasted.status).toBe(422);
    record('subscribe with a token in the body', pasted, pat);
    record('subscribe without scope', await subscribe(demo.personal_access_token_without_scopes, good));
    record('subscribe with a session', await subscribe(session.token, good));

    for (const token of [
      session.token,
      demo.large_customer_session_token,
      demo.expired_customer_session_token,
    ]) {
      record(
        'list wallets',
        await world.call('GET', '/v1/customer-portal/wallets/?sorting=-balance', { token }),
      );
    }
    record(
      'list wallets with a PAT',
      await world.call('GET', '/v1/customer-portal/wallets/', { token: pat }),
    );
    record(
      'delete endpoint',
      await world.call('DELETE', `/v1/webhooks/endpoints/${demo.webhook_endpoint_ids[0]}`, { token: pat }),
    );
    record(
      'delete foreign endpoint',
      await world.call('DELETE', `/v1/webhooks/endpoints/${demo.other_organization.webhook_endpoint_id}`, {
        token: pat,
      }),
    );
    // Unknown tokens of the right shape: a mistyped secret must not be logged either.
    const mistyped = `polar_pat_${'Q'.repeat(48)}`;
    secrets.add(mistyped);
    record('unknown PAT', await subscribe(mistyped, good));
    record('garbage bearer', await world.call('GET', '/v1/customer-portal/wallets/', { token: `${pat}x` }));

    // A 503 (throttled for good) and a 500 (an unexpected DynamoDB error): both are logged.
    const throttled = faultyApi(world, { kind: 'throttling', call: 2, times: Number.POSITIVE_INFINITY });
    const broken = faultyApi(world, undefined, {
      configure: (doc) =>
        doc.middlewareStack.add(
          () => async () => {
            throw Object.assign(new Error('One or more parameter values were invalid'), {
              name: 'ValidationException',
            });
          },
          { step: 'finalizeRequest', name: 'broken', priority: 'low' },
        ),
    });
    try {
      const unavailable = record(
        '503',
        await throttled.call('POST', '/v1/subscriptions/', { token: pat, body: good }),
      );
      expect(unavailable.status).toBe(503);
      const failed = record(
        '500',
        await broken.call('POST', '/v1/oauth2/register', {
          token: pat,
          body: { redirect_uris: ['https://a.example'], client_name: 'x' },
        }),
      );
      expect(failed.status).toBe(500);
    } finally {
      throttled.destroy();
      broken.destroy();
    }
    // The 5xx were logged (so the log scan below has something to look at).
    expect(logged.some((line) => line.includes('ServiceUnavailable'))).toBe(true);
    expect(logged.some((line) => line.includes('ValidationException'))).toBe(true);
  }, 60_000);

  it('the table holds no secret in plaintext, only hashes and ciphertext', async () => {
    const items = await scanTable(world.table);
    expect(items.length).toBeGreaterThan(150);
    const found = items.flatMap((item) => leaks(canonical(item)).map((leak) => `${item.PK}: ${leak}`));
    expect(found).toEqual([]);
    // Each token is findable by its hash, which is what is stored.
    for (const token of [world.demo.personal_access_token, world.demo.customer_session_token]) {
      expect(items.some((item) => item.PK === keys.token(hashSecret(token)).PK)).toBe(true);
    }
  });

  it("the webhook pipeline delivered the run's events: the marked values reached a receiver, signed", async () => {
    const [delivered] = receivers;
    const carries = (value: string) => delivered?.deliveries.some((d) => d.body.includes(value)) ?? false;
    await waitFor(() => BODY_VALUES.every(carries), 20_000, 'the marked events delivered');
    await pipeline.settled();
    expect(pipeline.errors).toEqual([]);
    // The receiver answering 500 got them too, and its failed attempts were logged.
    expect(receivers[1]?.deliveries.length).toBeGreaterThan(0);
  });

  it('nothing logged holds a secret', () => {
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.flatMap(leaks)).toEqual([]);
  });

  it("nothing logged holds a value only a request body held, the webhook pipeline's lines included", () => {
    const pipelineLines = logged.filter((line) =>
      /"message":"webhook (event relayed|delivery attempt)"/.test(line),
    );
    expect(pipelineLines.some((line) => line.includes('"outcome":"delivered"'))).toBe(true);
    expect(pipelineLines.some((line) => line.includes('"outcome":"retry"'))).toBe(true);
    expect(BODY_VALUES.filter((value) => logged.some((line) => line.includes(value)))).toEqual([]);
  });

  it('the request lines were among what was scanned: at least one per recorded answer, none without its operation', () => {
    const lines = logged
      .filter((line) => line.startsWith('{"level":"info","message":"request"'))
      .map((line) => JSON.parse(line));
    expect(lines.length).toBeGreaterThanOrEqual(answers.length);
    const operations = new Set(lines.map((line) => line.operation));
    for (const { operation } of lines) expect(operation).not.toBe('unknown');
    expect(operations.size).toBeGreaterThanOrEqual(4);
  });

  it('no answer carries a secret, except a registration its own client secret', () => {
    expect(answers.length).toBeGreaterThan(15);
    for (const { label, reply, returns = [] } of answers) {
      let text = JSON.stringify(reply.headers) + (reply.raw ?? '');
      // The placeholder a reader gets has a secret's shape and is none: no key, the same for all.
      for (const secret of [...returns, WEBHOOK_SECRET_PLACEHOLDER]) text = text.split(secret).join('');
      expect(leaks(text), label).toEqual([]);
    }
  });

  it("the operator's list of a user's personal access tokens carries no token and no token's hash", async () => {
    const stored = await findToken(world.table, hashSecret(world.demo.personal_access_token));
    if (stored?.kind !== 'personal_access_token') throw new Error('demo PAT missing');
    const listed = await listPersonalAccessTokensOf(world.admin, stored.user_id);
    // The demo user's two tokens at least, by id; their secrets and the hashes the table keys them by absent.
    expect(listed.map((token) => token.id)).toContain(stored.token_id);
    expect(listed.length).toBeGreaterThanOrEqual(2);
    const text = JSON.stringify(listed);
    expect(leaks(text)).toEqual([]);
    for (const secret of secrets) expect(text).not.toContain(hashSecret(secret));
  });
});

describe('expired and revoked credentials are refused by every operation, and change nothing', () => {
  const revoke = (token: string) =>
    world.table.doc.send(
      new UpdateCommand({
        TableName: world.table.name,
        Key: keys.token(hashSecret(token)),
        UpdateExpression: 'SET revoked_at = :t',
        ExpressionAttributeValues: { ':t': new Date().toISOString() },
      }),
    );

  it('PATs expired, expiring now, revoked; OAuth access tokens expired, revoked, of a deleted client; customer sessions expired and revoked', async () => {
    const { demo, admin } = world;
    const owner = await createUser(admin, { email: 'expiry@x.example' });
    await addMember(admin, demo.organization_id, owner.id);
    const scope = ALL_SCOPES.join(' ');
    const now = new Date();
    // Created earlier (an operator's clock in the past): the default lifetime ended a minute ago, or now.
    const createdAt = (ms: number) => ({ ...admin, now: () => new Date(ms) });
    const lifetime = PAT_DEFAULT_TTL_DAYS * 86_400_000;
    const pats: Record<string, string> = {
      expired: (
        await createPersonalAccessToken(createdAt(now.getTime() - lifetime - 60_000), {
          userId: owner.id,
          scope,
        })
      ).token,
      'expiring now': (
        await createPersonalAccessToken(createdAt(now.getTime() - lifetime), { userId: owner.id, scope })
      ).token,
      revoked: (await createPersonalAccessToken(admin, { userId: owner.id, scope })).token,
    };
    await revoke(pats.revoked as string);
    const customer = await getCustomer(world.table, demo.customer_id);
    if (!customer) throw new Error('demo data incomplete');
    const revokedSession = (await createCustomerSession(admin, { customer })).token;
    await revoke(revokedSession);
    const sessions = { expired: demo.expired_customer_session_token, revoked: revokedSession };
    // OAuth access tokens: expired, revoked, and of a client deleted since.
    const oauthClient = await registerClient(world.call, demo.personal_access_token);
    const expiredAccess = (await issueTokens(world.call, demo.personal_access_token, oauthClient))
      .access_token;
    await expireItem(world.table, keys.token(hashSecret(expiredAccess)));
    const revokedAccess = (await issueTokens(world.call, demo.personal_access_token, oauthClient))
      .access_token;
    await revoke(revokedAccess);
    const doomed = await registerClient(world.call, demo.personal_access_token);
    const orphanAccess = (await issueTokens(world.call, demo.personal_access_token, doomed)).access_token;
    expect(
      (
        await world.call('DELETE', `/v1/oauth2/register/${doomed.client_id}`, {
          token: doomed.registration_access_token,
        })
      ).status,
    ).toBe(204);
    Object.assign(pats, {
      'OAuth access token, expired': expiredAccess,
      'OAuth access token, revoked': revokedAccess,
      'OAuth access token of a deleted client': orphanAccess,
    });

    const before = await tableDigest(world.table);
    const requests = [
      (token: string) =>
        world.call('POST', '/v1/oauth2/register', {
          token,
          body: { redirect_uris: ['https://a.example'], client_name: 'x' },
        }),
      (token: string) =>
        world.call('POST', '/v1/subscriptions/', {
          token,
          body: { product_id: demo.free_product_id, customer_id: demo.customer_id },
        }),
      (token: string) =>
        world.call('DELETE', `/v1/webhooks/endpoints/${demo.webhook_endpoint_ids[2]}`, { token }),
      (token: string) =>
        world.call('POST', '/v1/events/ingest', {
          token,
          body: {
            events: [{ name: 'hygiene', customer_id: demo.customer_id, external_id: 'hygiene-refused' }],
          },
        }),
    ];
    for (const [label, token] of Object.entries(pats)) {
      for (const [index, send] of requests.entries()) {
        const reply = await send(token);
        expect(reply.status, label).toBe(401);
        if (index === 0 && label.startsWith('OAuth')) {
          // Create Client takes no OAuth access token at all: refused for its kind, before any read.
          expect(reply.body.error, label).toBe('Unauthorized');
          continue;
        }
        expect(reply.body).toEqual({ error: 'invalid_token', error_description: expect.any(String) });
        expect(reply.headers['www-authenticate']).toBe('Bearer realm="polar", error="invalid_token"');
      }
    }
    for (const [label, token] of Object.entries(sessions)) {
      const reply = await world.call('GET', '/v1/customer-portal/wallets/', { token });
      expect(reply.status, label).toBe(401);
      expect(reply.body.error).toBe('invalid_token');
    }
    expect(digestChanges(before, await tableDigest(world.table))).toEqual([]);
  });
});
