/**
 * What the DynamoDB-work cases (test/bench/dynamo-work.ts; one list per operation, in its card's
 * `dynamoWork`) share: the case's shape and the requests their uncounted `prepare` steps make.
 */
import { createHash } from 'node:crypto';
import type { LocalWorld } from './local-table.ts';

/** A case of an operation's card (slot `dynamoWork`): one request, measured. */
export interface DynamoCase {
  /** Unique among the cases; `<base>+<variant>` is compared with the case `<base>`. */
  key: string;
  label: string;
  status: number;
  target?: number;
  /** Sends one request; `i` numbers the repetitions. */
  send(world: LocalWorld, i: number): Promise<{ status: number; body: string | undefined }>;
  /** Work before each measured request that must not be counted (e.g. creating the endpoint to delete). */
  prepare?(world: LocalWorld, i: number): Promise<unknown>;
}

const registration = { client_name: 'Bench', redirect_uris: ['https://app.example.com/callback'] };
export const benchRun = Date.now().toString(36);

/** The clients the cases registered and have not deleted: a user may hold at most 20 (limits.md). */
const registered = new Map<string, string>();

export const createClient = async (world: LocalWorld, key?: string) => {
  const reply = await world.call('create-client', 'POST', '/v1/oauth2/register', {
    token: world.demo.personal_access_token,
    body: registration,
    ...(key ? { headers: { 'Idempotency-Key': key } } : {}),
  });
  if (reply.status === 201 && reply.body) {
    const client = JSON.parse(reply.body) as { client_id: string; registration_access_token: string };
    registered.set(client.client_id, client.registration_access_token);
  }
  return reply;
};

/**
 * Deletes (RFC 7592, uncounted: call it from `prepare`) every client the cases registered, so that the
 * demo user stays under its cap of live clients however many repetitions run. A client a case deleted
 * itself answers 401 here, which is fine.
 */
export async function roomForClients(world: LocalWorld): Promise<void> {
  for (const [clientId, token] of registered) {
    await world.call('delete-client', 'DELETE', `/v1/oauth2/register/${clientId}`, { token });
    registered.delete(clientId);
  }
}

export const createSubscription = (world: LocalWorld, key?: string) =>
  world.call('create-subscription', 'POST', '/v1/subscriptions/', {
    token: world.demo.personal_access_token,
    body: { product_id: world.demo.free_product_id, customer_id: world.demo.customer_id },
    ...(key ? { headers: { 'Idempotency-Key': key } } : {}),
  });

export const endpointsToDelete: string[] = [];
export const subscriptionsToChange: string[] = [];
const customersToChange: { id: string; externalId: string }[] = [];

/** A change or delete of a fresh customer (made in the uncounted `prepare` step), by id or external id. */
export function customerChangeCase(
  operation: 'update-customer' | 'update-customer-external' | 'delete-customer' | 'delete-customer-external',
  label: string,
  by: 'id' | 'external',
): DynamoCase {
  const update = operation.startsWith('update');
  return {
    key: operation,
    label,
    status: update ? 200 : 204,
    target: 3,
    prepare: async (world, i) => {
      customersToChange[i] = await freshCustomer(world, i);
    },
    send: (world, i) => {
      const customer = customersToChange[i];
      const path = by === 'id' ? customer?.id : `external/${customer?.externalId}`;
      return world.call(operation, update ? 'PATCH' : 'DELETE', `/v1/customers/${path}`, {
        token: world.demo.personal_access_token,
        ...(update
          ? { body: { email: `bench-moved+${benchRun}-${operation}-${i}@example.com`, name: 'Moved' } }
          : {}),
      });
    },
  };
}

/** A customer to change or delete, through Create Customer (not counted: a `prepare` step). */
async function freshCustomer(world: LocalWorld, i: number): Promise<{ id: string; externalId: string }> {
  const externalId = `bench-change-${benchRun}-${i}-${Math.random().toString(36).slice(2)}`;
  const reply = await world.call('create-customer', 'POST', '/v1/customers/', {
    token: world.demo.personal_access_token,
    body: { email: `${externalId}@example.com`, name: 'Bench', external_id: externalId },
  });
  return { id: JSON.parse(reply.body ?? '{}').id, externalId };
}

/** Subscriptions of the demo customer, one per repetition, for the portal's changes. */
export const portalSubscriptions: string[] = [];

/** A fresh client per repetition (RFC 7592 cases), registered outside the measured request. */
export const registrations: { client_id: string; registration_access_token: string }[] = [];
export async function freshRegistration(world: LocalWorld) {
  await roomForClients(world);
  const reply = await createClient(world);
  if (reply.status !== 201 || !reply.body) throw new Error(`Create Client answered ${reply.status}`);
  return JSON.parse(reply.body) as { client_id: string; registration_access_token: string };
}
export const registrationCall = (
  world: LocalWorld,
  name: 'get-client' | 'update-client' | 'delete-client',
  method: string,
  i: number,
) => {
  const client = registrations[i];
  if (!client) throw new Error('no registration prepared');
  return world.call(name, method, `/v1/oauth2/register/${client.client_id}`, {
    token: client.registration_access_token,
    ...(method === 'PUT' ? { body: { ...registration, client_id: client.client_id } } : {}),
  });
};

/** Codes issued by the consent a Request Token repetition prepares, with their verifiers. */
export const codes: { code: string; verifier: string }[] = [];
export const pkceOf = (i: number) => {
  const verifier = `bench-verifier-${benchRun}-${i}`.padEnd(43, 'v');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/** The demo client's credentials, in the form (it registered client_secret_post). */
export const demoClient = (world: LocalWorld) => ({
  client_id: world.demo.oauth_client.client_id,
  client_secret: world.demo.oauth_client.client_secret,
});

/** A code of the demo client from the demo user's consent, with its PKCE verifier. */
export async function demoCode(world: LocalWorld, i: number): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkceOf(i);
  const consented = await world.call('consent', 'POST', '/v1/oauth2/consent', {
    token: world.demo.personal_access_token,
    body: {
      action: 'allow',
      ...Object.fromEntries(new URLSearchParams(demoAuthorization(world))),
      code_challenge: challenge,
    },
  });
  return { code: new URL(String(consented.headers.Location)).searchParams.get('code') as string, verifier };
}

/** Tokens of the demo client from a consent and a code exchange, made outside the measured request. */
export const families: { access_token: string; refresh_token: string }[] = [];
export async function demoTokens(world: LocalWorld, i: number) {
  const { code, verifier } = await demoCode(world, 1000 + i);
  const exchanged = await world.call('request-token', 'POST', '/v1/oauth2/token', {
    form: {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: 'http://127.0.0.1:8080/callback',
      ...demoClient(world),
    },
  });
  if (exchanged.status !== 200) throw new Error(`Request Token answered ${exchanged.status}`);
  return JSON.parse(exchanged.body ?? '{}') as { access_token: string; refresh_token: string };
}

/** An authorization request of the demo client (PKCE S256). */
export const demoAuthorization = (world: LocalWorld) =>
  new URLSearchParams({
    response_type: 'code',
    client_id: world.demo.oauth_client.client_id,
    redirect_uri: 'http://127.0.0.1:8080/callback',
    scope: 'openid',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSW2w-cM',
    code_challenge_method: 'S256',
  }).toString();
