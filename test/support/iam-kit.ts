/**
 * What the IAM scenarios (one per function, in its card: test/cards/<function>.ts) share: the step
 * they report, the fresh objects they start from, the run's idempotency keys, the OAuth access
 * tokens of the IAM world. The suites are test/integration/iam.test.ts and iam-mutations.test.ts
 * (test/support/iam-scenarios.ts).
 */
import { randomUUID } from 'node:crypto';
import { DeleteCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { organizationWebhookEndpoints, softDeleteWebhookEndpoint } from '#shared/data/webhooks.ts';
import { CAPS, type CapName } from '#shared/domain/limits.ts';
import type { OperationName, PipelineFunctionName, ScheduledFunctionName } from '#shared/operations.ts';
import { aggregateEvents } from '#shared/services/meter-aggregation.ts';
import { newMeter, storeNewMeter } from '#shared/services/meters.ts';
import { registrants } from './oauth.ts';
import type { Reply, World } from './world.ts';

/** The functions whose grants are proven here: the operations', the scheduled and the pipeline's. */
export type FunctionName = OperationName | ScheduledFunctionName | PipelineFunctionName;

/** One request of a scenario: what it answered, and what its full grant must make it answer. */
export interface Step {
  what: string;
  got: string;
  expected: string;
}

export type Scenario = (world: World) => Promise<Step[]>;

export const step = (
  what: string,
  reply: Reply,
  status: number,
  sameAs?: { reply: Reply; field: string },
): Step => {
  const differs = sameAs && reply.body?.[sameAs.field] !== sameAs.reply.body?.[sameAs.field];
  return { what, got: `${reply.status}${differs ? ` another ${sameAs.field}` : ''}`, expected: `${status}` };
};

/** A fresh subscription through Create Subscription (its own function and policy). */
export async function freshSubscription(world: World): Promise<string> {
  const reply = await world.call('POST', '/v1/subscriptions/', {
    token: world.demo.personal_access_token,
    body: { product_id: world.demo.free_product_id, customer_id: world.demo.customer_id },
  });
  if (reply.status !== 201) throw new Error(`Create Subscription answered ${reply.status}`);
  return reply.body.id;
}

/**
 * A fresh product of the demo organization with a free fixed price and a metered price on a count
 * meter of its own (operator access), and usage: two events of the demo customer folded by the meter
 * aggregator. A subscription of the demo customer to it makes every write that presents it (Create,
 * Update, Revoke, the portal's cancel and uncancel, the clock) read the meter and its usage.
 */
export async function freshMeteredProduct(world: World): Promise<string> {
  const name = `iam.${randomUUID()}`;
  const meter = newMeter(
    {
      name: `IAM ${name.slice(4, 12)}`,
      filter: { conjunction: 'and', clauses: [{ property: 'name', operator: 'eq', value: name }] },
      aggregation: { func: 'count' },
    },
    world.demo.organization_id,
    new Date(Date.now() - 60_000),
  );
  await storeNewMeter(world.admin.table, meter);
  const at = new Date().toISOString();
  await aggregateEvents(
    { table: world.admin.table, now: () => new Date() },
    `iam-${randomUUID()}`,
    [1, 2].map((n) => ({
      sequence: String(n),
      event: {
        id: randomUUID(),
        organization_id: world.demo.organization_id,
        name,
        timestamp_us: Date.parse(at) * 1000,
        external_id: null,
        customer_id: world.demo.customer_id,
        external_customer_id: null,
        metadata: '{}',
        ingest_request: randomUUID(),
        ingested_at: at,
      },
    })),
  );
  const product = await world.call('POST', '/v1/products/', {
    token: world.demo.personal_access_token,
    body: {
      name: `IAM metered ${randomUUID()}`,
      recurring_interval: 'month',
      prices: [
        { amount_type: 'fixed', price_amount: 0 },
        { amount_type: 'metered_unit', unit_amount: '0.5', meter_id: meter.id },
      ],
    },
  });
  if (product.status !== 201) throw new Error(`Create Product answered ${product.status}`);
  return product.body.id;
}

/**
 * A fresh subscription of the demo customer (the demo customer session's) to a fresh metered
 * product with usage (`freshMeteredProduct`), through Create Subscription. Its meters make Get /
 * List Subscriptions and every write that presents it read the meter and its usage.
 */
export async function freshMeteredSubscription(world: World): Promise<{ id: string; productId: string }> {
  const productId = await freshMeteredProduct(world);
  const reply = await world.call('POST', '/v1/subscriptions/', {
    token: world.demo.personal_access_token,
    body: { product_id: productId, customer_id: world.demo.customer_id },
  });
  if (reply.status !== 201) throw new Error(`Create Subscription answered ${reply.status}`);
  return { id: reply.body.id, productId };
}

/** A fresh customer through Create Customer (its own function and policy), with an external id or none. */
export async function freshCustomer(
  world: World,
  withExternalId = true,
): Promise<{ id: string; externalId: string }> {
  const externalId = `iam-${randomUUID()}`;
  const reply = await world.call('POST', '/v1/customers/', {
    token: world.demo.personal_access_token,
    body: {
      email: `iam-${randomUUID()}@example.com`,
      name: 'IAM',
      ...(withExternalId ? { external_id: externalId } : {}),
    },
  });
  if (reply.status !== 201) throw new Error(`Create Customer answered ${reply.status}`);
  return { id: reply.body.id, externalId };
}

/**
 * A personal access token (user:write) to register a scenario's client with: a new user's every
 * `CAPS.oauthClients.limit` calls, so that the runs sharing one world (iam-mutations re-runs the
 * scenarios hundreds of times) never meet the cap of clients per user. Who registered a client
 * matters to no flow: any user may consent.
 */
export function registrant(world: World): Promise<string> {
  const key = world.table.name;
  let next = registrantsOf.get(key);
  if (!next) {
    next = registrants(world.admin);
    registrantsOf.set(key, next);
  }
  return next();
}
const registrantsOf = new Map<string, () => Promise<string>>();

/** A fresh client through Create Client (its own function and policy): RFC 7592 scenarios start from it. */
export async function registerClient(
  world: World,
): Promise<{ client_id: string; registration_access_token: string }> {
  const reply = await world.call('POST', '/v1/oauth2/register', {
    token: await registrant(world),
    body: { client_name: 'IAM scenario', redirect_uris: ['https://app.example.com/callback'] },
  });
  if (reply.status !== 201) throw new Error(`Create Client answered ${reply.status}`);
  return reply.body;
}

/**
 * Deletes (operator access, no IAM) the demo organization's live webhook endpoints that the seed did
 * not make: what earlier runs created. Every run starts from the seed's endpoints, so the runs
 * sharing one world never meet the cap of endpoints per organization (`CAPS.webhookEndpoints`).
 */
export async function endpointsBackToSeed(world: World): Promise<void> {
  const seeded = new Set(world.demo.webhook_endpoint_ids);
  for (const endpoint of await organizationWebhookEndpoints(world.table, world.demo.organization_id)) {
    if (!seeded.has(endpoint.id))
      await softDeleteWebhookEndpoint(world.table, endpoint, new Date().toISOString());
  }
}

/**
 * Removes every owner's counter of `cap` (operator access, no IAM), as for data from before the
 * counters: the next create or delete counts the owner's live items (its Query), then writes the
 * counter, so that a scenario run after it uses both the count's grant and the counter's.
 */
export async function forgetCapCounters(world: World, cap: CapName): Promise<void> {
  const prefix = `CAP#${CAPS[cap].kind}#`;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await world.table.doc.send(
      new ScanCommand({
        TableName: world.table.name,
        ConsistentRead: true,
        FilterExpression: 'begins_with(PK, :prefix)',
        ExpressionAttributeValues: { ':prefix': prefix },
        ProjectionExpression: 'PK, SK',
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      await world.table.doc.send(
        new DeleteCommand({ TableName: world.table.name, Key: { PK: item.PK, SK: item.SK } }),
      );
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

/** Idempotency keys unique to one run of a scenario: the runs share one table. */
export let run = 0;
export const key = (name: string) => `iam-${run}-${name}`;
/** Starts a scenario's run: its own idempotency keys and names. */
export const nextRun = (): void => {
  run++;
};

/**
 * OAuth access tokens: a live one acting for the demo organization, and one of a client deleted since.
 * Every operation that takes a personal access token takes these too, reading the token with its
 * client's liveness item in one batch; the deleted client's token walks that path to its refusal.
 */
export const oauth = { organizationToken: '', deletedClientToken: '' };

/** An authorization request of the demo client, PKCE S256 included (its challenge need not match anything). */
export function authorizationQuery(clientId: string): string {
  return new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: 'http://127.0.0.1:8080/callback',
    scope: 'openid',
    state: 'iam',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSW2w-cM',
    code_challenge_method: 'S256',
  }).toString();
}
