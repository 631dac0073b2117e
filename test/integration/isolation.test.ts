/**
 * Tenant isolation: anything of another organization, an unknown id and a
 * deleted item get answers that cannot be told apart (status, body with the id
 * itself masked, headers), so ids are never confirmed across tenants; and a
 * customer session only ever sees its own customer's wallets.
 */
import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createCustomer,
  createCustomerSession,
  createPersonalAccessToken,
  createProduct,
  createUser,
  createWebhookEndpoint,
} from '#scripts/admin/commands.ts';
import { getCustomer } from '#shared/data/catalog.ts';
import { keys } from '#shared/data/table.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { type OperationName, operations } from '#shared/operations.ts';
import {
  clientRequest,
  issueTokens,
  type RegisteredClient,
  registerClient as registerOAuthClient,
  tokenRequest,
} from '../support/oauth.ts';
import { seedWebhookEvent } from '../support/outbox.ts';
import { softDelete } from '../support/table-state.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let world: World;
/** A second organization's PAT with every scope, a user in both organizations, a user in none. */
let bothOrgsPat: string;
let noOrgPat: string;
let deletedProductId: string;
let deletedCustomerId: string;
/** External ids: of a customer deleted through the API, of a customer of the other organization. */
let deletedExternalId: string;
let foreignExternalId: string;
let deletedEndpointId: string;
let otherDeletedEndpointId: string;
const sessions: { customerId: string; token: string }[] = [];

beforeAll(async () => {
  world = await createWorld('isolation');
  const { demo, admin } = world;
  const all = ALL_SCOPES.join(' ');

  const both = await createUser(admin, { email: `both+${randomUUID()}@x.example` });
  await addMember(admin, demo.organization_id, both.id);
  await addMember(admin, demo.other_organization.organization_id, both.id);
  bothOrgsPat = (await createPersonalAccessToken(admin, { userId: both.id, scope: all })).token;
  const nobody = await createUser(admin, { email: `nobody+${randomUUID()}@x.example` });
  noOrgPat = (await createPersonalAccessToken(admin, { userId: nobody.id, scope: all })).token;

  const product = await createProduct(admin, {
    organizationId: demo.organization_id,
    name: 'gone',
    recurringInterval: 'month',
    priceAmount: 0,
    currency: 'usd',
  });
  await softDelete(world.table, keys.product(product.id));
  deletedProductId = product.id;
  deletedExternalId = `gone-${randomUUID()}`;
  const customer = await createCustomer(admin, {
    organizationId: demo.organization_id,
    email: 'gone@x.example',
    externalId: deletedExternalId,
  });
  const deleted = await world.call('DELETE', `/v1/customers/${customer.id}`, {
    token: demo.personal_access_token,
  });
  if (deleted.status !== 204) throw new Error(`Delete Customer answered ${deleted.status}`);
  deletedCustomerId = customer.id;
  foreignExternalId = `theirs-${randomUUID()}`;
  await createCustomer(admin, {
    organizationId: demo.other_organization.organization_id,
    email: 'theirs@x.example',
    externalId: foreignExternalId,
  });
  for (const [organizationId, assign] of [
    [demo.organization_id, (id: string) => (deletedEndpointId = id)],
    [demo.other_organization.organization_id, (id: string) => (otherDeletedEndpointId = id)],
  ] as const) {
    const { endpoint } = await createWebhookEndpoint(admin, {
      organizationId,
      url: 'https://h.example/gone',
    });
    await softDelete(world.table, keys.webhookEndpoint(endpoint.id));
    assign(endpoint.id);
  }

  const otherCustomer = await getCustomer(world.table, demo.other_organization.customer_id);
  if (!otherCustomer) throw new Error('demo data incomplete');
  sessions.push(
    { customerId: demo.customer_id, token: demo.customer_session_token },
    { customerId: demo.second_customer_id, token: demo.second_customer_session_token },
    { customerId: demo.large_customer_id, token: demo.large_customer_session_token },
    {
      customerId: otherCustomer.id,
      token: (await createCustomerSession(admin, { customer: otherCustomer })).token,
    },
  );
});
afterAll(() => world?.drop());

/** Status, headers and body, with the ids named in the request replaced by a placeholder. */
function observable(reply: Reply, ids: string[]) {
  let raw = reply.raw ?? '';
  // Ids are accepted in either case and echoed normalised: mask both spellings.
  for (const id of ids.flatMap((id) => [id, id.toLowerCase()])) raw = raw.split(id).join('<id>');
  return { status: reply.status, headers: reply.headers, raw };
}

function expectIndistinguishable(reply: Reply, baseline: Reply, ids: string[], baselineIds: string[]): void {
  expect(observable(reply, ids)).toEqual(observable(baseline, baselineIds));
}

describe('Create Subscription: foreign, unknown and deleted ids answer alike', () => {
  const subscribe = (productId: string, customerId: string, token = world.demo.personal_access_token) =>
    world.call('POST', '/v1/subscriptions/', {
      token,
      body: { product_id: productId, customer_id: customerId },
    });

  it('products: another organization, deleted, unknown (either case)', async () => {
    const unknown = randomUUID();
    const baseline = await subscribe(unknown, world.demo.customer_id);
    expect(baseline.status).toBe(422);
    expect(baseline.body.detail[0].msg).toBe('Product does not exist.');
    const cases: [string, string][] = [
      ['other organization', world.demo.other_organization.free_product_id],
      ['other organization, upper case', world.demo.other_organization.free_product_id.toUpperCase()],
      ['deleted', deletedProductId],
      ['unknown, upper case', randomUUID().toUpperCase()],
    ];
    for (const [label, id] of cases) {
      const reply = await subscribe(id, world.demo.customer_id);
      expect(observable(reply, [id]), label).toEqual(observable(baseline, [unknown]));
    }
  });

  it('customers: another organization, deleted, unknown', async () => {
    const unknown = randomUUID();
    const baseline = await subscribe(world.demo.free_product_id, unknown);
    expect(baseline.body.detail[0].msg).toBe('Customer does not exist.');
    for (const id of [world.demo.other_organization.customer_id, deletedCustomerId, randomUUID()]) {
      expectIndistinguishable(await subscribe(world.demo.free_product_id, id), baseline, [id], [unknown]);
    }
  });

  it("a user of both organizations cannot mix one organization's product with the other's customer", async () => {
    const unknown = randomUUID();
    const baseline = await subscribe(world.demo.free_product_id, unknown, bothOrgsPat);
    const mixed = await subscribe(
      world.demo.free_product_id,
      world.demo.other_organization.customer_id,
      bothOrgsPat,
    );
    expectIndistinguishable(mixed, baseline, [world.demo.other_organization.customer_id], [unknown]);
    // …while each organization's own pair works for that user.
    expect((await subscribe(world.demo.free_product_id, world.demo.customer_id, bothOrgsPat)).status).toBe(
      201,
    );
    const other = world.demo.other_organization;
    expect((await subscribe(other.free_product_id, other.customer_id, bothOrgsPat)).status).toBe(201);
  });

  it("the other organization's token sees our product as unknown; a user in no organization sees nothing", async () => {
    const other = world.demo.other_organization;
    const unknown = randomUUID();
    for (const token of [other.personal_access_token, noOrgPat]) {
      const baseline = await subscribe(unknown, world.demo.customer_id, token);
      const reply = await subscribe(world.demo.free_product_id, world.demo.customer_id, token);
      expectIndistinguishable(reply, baseline, [world.demo.free_product_id], [unknown]);
    }
  });
});

describe('Delete Webhook Endpoint: foreign, unknown and deleted ids answer alike', () => {
  const del = (id: string, token = world.demo.personal_access_token) =>
    world.call('DELETE', `/v1/webhooks/endpoints/${id}`, { token });

  it('for every kind of id and every caller, the same 404, and nothing changes', async () => {
    const other = world.demo.other_organization;
    const callers = [world.demo.personal_access_token, other.personal_access_token, noOrgPat];
    const ours = world.demo.webhook_endpoint_ids[1] as string;
    const foreignTo = new Map([
      [
        world.demo.personal_access_token,
        [other.webhook_endpoint_id, otherDeletedEndpointId, deletedEndpointId],
      ],
      [other.personal_access_token, [ours, deletedEndpointId, otherDeletedEndpointId]],
      [noOrgPat, [ours, other.webhook_endpoint_id]],
    ]);
    for (const token of callers) {
      const unknown = randomUUID();
      const baseline = await del(unknown, token);
      expect(baseline.status).toBe(404);
      expect(baseline.body).toEqual({ error: 'ResourceNotFound', detail: 'Not found' });
      for (const id of [...(foreignTo.get(token) ?? []), randomUUID().toUpperCase()]) {
        expectIndistinguishable(await del(id, token), baseline, [id], [unknown]);
        expectIndistinguishable(await del(id.toUpperCase(), token), baseline, [id.toUpperCase()], [unknown]);
      }
    }
    // The endpoints probed by the other callers are untouched.
    const { Items } = await world.table.doc.send(
      new QueryCommand({
        TableName: world.table.name,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': keys.webhookEndpoint(ours).PK },
      }),
    );
    expect(Items?.[0]?.deleted_at).toBeNull();
    expect((await del(ours)).status).toBe(204);
  });
});

describe('List Wallets: a session sees its own customer only', () => {
  const walletIdsOf = async (customerId: string) =>
    (
      (
        await world.table.doc.send(
          new QueryCommand({
            TableName: world.table.name,
            KeyConditionExpression: 'PK = :pk AND begins_with(SK, :w)',
            ExpressionAttributeValues: { ':pk': `CUSTOMER#${customerId}`, ':w': 'WALLET#' },
          }),
        )
      ).Items ?? []
    )
      .map((item) => item.id as string)
      .sort();

  it('every page of every session, walked to the end, is exactly its customer’s wallets', async () => {
    for (const { customerId, token } of sessions) {
      const seen: string[] = [];
      for (let page = 1; ; page++) {
        const reply = await world.call('GET', `/v1/customer-portal/wallets/?limit=100&page=${page}`, {
          token,
        });
        expect(reply.status).toBe(200);
        for (const wallet of reply.body.items) expect(wallet.customer_id).toBe(customerId);
        seen.push(...reply.body.items.map((wallet: { id: string }) => wallet.id));
        if (page >= reply.body.pagination.max_page) break;
      }
      expect(seen.sort()).toEqual(await walletIdsOf(customerId));
    }
  });

  it('property: random sessions and queries only ever list the session customer’s wallets', async () => {
    const totals = new Map<string, number>();
    for (const { customerId } of sessions) totals.set(customerId, (await walletIdsOf(customerId)).length);
    const sorting = fc.constantFrom('created_at', '-created_at', 'balance', '-balance');
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...sessions),
        fc.integer({ min: 1, max: 15 }),
        fc.integer({ min: 1, max: 120 }),
        fc.array(sorting, { maxLength: 3 }),
        async ({ customerId, token }, page, limit, sorts) => {
          const query = new URLSearchParams({ page: String(page), limit: String(limit) });
          for (const s of sorts) query.append('sorting', s);
          const reply = await world.call('GET', `/v1/customer-portal/wallets/?${query}`, { token });
          expect(reply.status).toBe(200);
          expect(reply.body.pagination.total_count).toBe(totals.get(customerId));
          for (const wallet of reply.body.items) expect(wallet.customer_id).toBe(customerId);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("a deleted customer's session is refused like an unknown token", async () => {
    const customer = await createCustomer(world.admin, {
      organizationId: world.demo.organization_id,
      email: `soon-gone+${randomUUID()}@x.example`,
    });
    const { token } = await createCustomerSession(world.admin, { customer });
    await softDelete(world.table, keys.customer(customer.id));
    const unknown = `polar_cst_${'Z'.repeat(48)}`;
    const baseline = await world.call('GET', '/v1/customer-portal/wallets/', { token: unknown });
    const reply = await world.call('GET', '/v1/customer-portal/wallets/', { token });
    expect(baseline.status).toBe(401);
    expectIndistinguishable(reply, baseline, [], []);
  });
});

describe('List Customers: filters naming another tenant find what unknown values find: nothing', () => {
  it('organization_id, e-mail address and external id of another organization', async () => {
    const list = (query: string) =>
      world.call('GET', `/v1/customers/?${query}`, { token: world.demo.personal_access_token });
    const baseline = await list(`organization_id=${randomUUID()}`);
    expect(baseline.body).toEqual({ items: [], pagination: { total_count: 0, max_page: 0 } });
    for (const query of [
      `organization_id=${world.demo.other_organization.organization_id}`,
      'email=theirs@x.example',
      `email=${encodeURIComponent('nobody@x.example')}`,
      `query=${foreignExternalId}`,
      'query=theirs',
      `query=${deletedExternalId}`,
    ]) {
      expectIndistinguishable(await list(query), baseline, [], []);
    }
    // Its own member sees them.
    const theirs = await world.call('GET', '/v1/customers/?email=theirs@x.example', {
      token: world.demo.other_organization.personal_access_token,
    });
    expect(theirs.body.pagination.total_count).toBe(1);
  });
});

/**
 * The matrix: every operation that names a resource by id is probed with ids of another tenant (or,
 * for the portal, another customer) and of deleted items, each answered exactly like an unknown id.
 * Keyed by operation name: a new operation does not compile until it has its row, or says why it
 * names no resource.
 */
interface Probe {
  /** The ids that must be indistinguishable from an unknown one, with a label each. */
  ids(): Promise<[string, string][]>;
  send(id: string): Promise<Reply>;
  /** How the answer to an unknown id refuses it; default: a 4xx. */
  refuses?(reply: Reply): void;
}
type Row = Probe | { namesNoResource: string };

/** A list filtered by the id: an unknown id gives an empty page (200), not an error. */
const emptyPage = (reply: Reply) => {
  expect(reply.status).toBe(200);
  expect(reply.body.items).toEqual([]);
};

/** A subscription of the other organization is changed by nobody but its own members. */
function lifecycleRow(method: 'PATCH' | 'DELETE'): Probe {
  return {
    ids: async () => {
      const other = world.demo.other_organization;
      const theirs = await world.call('POST', '/v1/subscriptions/', {
        token: other.personal_access_token,
        body: { product_id: other.free_product_id, customer_id: other.customer_id },
      });
      expect(theirs.status).toBe(201);
      return [['subscription of another organization', theirs.body.id as string]];
    },
    send: (id) =>
      world.call(method, `/v1/subscriptions/${id}`, {
        token: world.demo.personal_access_token,
        ...(method === 'PATCH' ? { body: { revoke: true } } : {}),
      }),
  };
}

/** An endpoint of another organization, or a deleted one, is read and changed by nobody. */
function endpointRow(method: 'GET' | 'PATCH', suffix = '', body?: unknown): Probe {
  return {
    ids: async () => [
      ['endpoint of another organization', world.demo.other_organization.webhook_endpoint_id],
      ['deleted endpoint', deletedEndpointId],
      ['deleted endpoint of another organization', otherDeletedEndpointId],
    ],
    send: (id) =>
      world.call(method, `/v1/webhooks/endpoints/${id}${suffix}`, {
        token: world.demo.personal_access_token,
        ...(body === undefined ? {} : { body }),
      }),
  };
}

/** Subscriptions of another customer of the organization and of another organization's customer. */
async function othersSubscriptions(): Promise<[string, string][]> {
  const other = world.demo.other_organization;
  const subscribe = async (token: string, product_id: string, customer_id: string) => {
    const reply = await world.call('POST', '/v1/subscriptions/', {
      token,
      body: { product_id, customer_id },
    });
    expect(reply.status).toBe(201);
    return reply.body.id as string;
  };
  return [
    [
      'subscription of another customer of the organization',
      await subscribe(
        world.demo.personal_access_token,
        world.demo.free_product_id,
        world.demo.second_customer_id,
      ),
    ],
    [
      'subscription of another organization',
      await subscribe(other.personal_access_token, other.free_product_id, other.customer_id),
    ],
  ];
}

let subscriberless: Promise<string> | undefined;
/** The session of a fresh customer of the organization, who subscribes to nothing. */
function subscriberlessSession(): Promise<string> {
  subscriberless ??= createCustomer(world.admin, {
    organizationId: world.demo.organization_id,
    email: `nothing+${randomUUID()}@x.example`,
  }).then(async (customer) => (await createCustomerSession(world.admin, { customer })).token);
  return subscriberless;
}

/** A customer session reads and changes its own customer's subscriptions, nobody else's. */
function portalRow(method: 'GET' | 'PATCH' | 'DELETE'): Probe {
  return {
    ids: othersSubscriptions,
    send: (id) =>
      world.call(method, `/v1/customer-portal/subscriptions/${id}`, {
        token: world.demo.customer_session_token,
        ...(method === 'PATCH' ? { body: { cancel_at_period_end: true } } : {}),
      }),
  };
}

async function registered(token: string): Promise<{ client_id: string; registration_access_token: string }> {
  const reply = await world.call('POST', '/v1/oauth2/register', {
    token,
    body: { client_name: 'isolation', redirect_uris: ['https://app.example/cb'] },
  });
  expect(reply.status).toBe(201);
  return reply.body;
}

/**
 * RFC 7592: a registration token reaches its own client only. Another user's client, another client
 * of the same user and a deleted client, named with this client's token, answer as an unknown id.
 */
function registrationRow(method: 'GET' | 'PUT' | 'DELETE'): Probe {
  let mine: { client_id: string; registration_access_token: string } | undefined;
  return {
    ids: async () => {
      const theirs = await registered(world.demo.other_organization.personal_access_token);
      const sibling = await registered(world.demo.personal_access_token);
      const deleted = await registered(world.demo.personal_access_token);
      const removed = await world.call('DELETE', `/v1/oauth2/register/${deleted.client_id}`, {
        token: deleted.registration_access_token,
      });
      expect(removed.status).toBe(204);
      return [
        ['client of another user', theirs.client_id],
        ['another client of the same user', sibling.client_id],
        ['deleted client', deleted.client_id],
      ];
    },
    send: async (id) => {
      mine ??= await registered(world.demo.personal_access_token);
      return world.call(method, `/v1/oauth2/register/${id}`, {
        token: mine.registration_access_token,
        ...(method === 'PUT'
          ? { body: { client_id: id, client_name: 'isolation', redirect_uris: ['https://app.example/cb'] } }
          : {}),
      });
    },
  };
}

const isolationMatrix = {
  'create-client': { namesNoResource: 'a registration refers to no resource of an organization' },
  'list-wallets': { namesNoResource: 'the session itself names the customer (covered above)' },
  'create-subscription': {
    ids: async () => [
      ['customer of another organization', world.demo.other_organization.customer_id],
      ['deleted customer', deletedCustomerId],
    ],
    send: (id) =>
      world.call('POST', '/v1/subscriptions/', {
        token: world.demo.personal_access_token,
        body: { product_id: world.demo.free_product_id, customer_id: id },
      }),
  },
  'delete-webhook-endpoint': {
    ids: async () => [
      ['endpoint of another organization', world.demo.other_organization.webhook_endpoint_id],
      ['deleted endpoint', deletedEndpointId],
    ],
    send: (id) =>
      world.call('DELETE', `/v1/webhooks/endpoints/${id}`, { token: world.demo.personal_access_token }),
  },
  'create-customer-session': {
    ids: async () => [
      ['customer of another organization', world.demo.other_organization.customer_id],
      ['deleted customer', deletedCustomerId],
    ],
    send: (id) =>
      world.call('POST', '/v1/customer-sessions/', {
        token: world.demo.personal_access_token,
        body: { customer_id: id },
      }),
  },
  'get-wallet': {
    ids: async () => {
      const walletOf = async (token: string) =>
        (await world.call('GET', '/v1/customer-portal/wallets/?limit=1', { token })).body.items[0]
          .id as string;
      const otherSession = sessions.find((s) => s.customerId === world.demo.other_organization.customer_id);
      return [
        [
          'wallet of another customer of the organization',
          await walletOf(world.demo.second_customer_session_token),
        ],
        ['wallet of another organization', await walletOf(otherSession?.token as string)],
      ];
    },
    send: (id) =>
      world.call('GET', `/v1/customer-portal/wallets/${id}`, { token: world.demo.customer_session_token }),
  },
  'get-product': {
    ids: async () => [
      ['product of another organization', world.demo.other_organization.free_product_id],
      ['deleted product', deletedProductId],
    ],
    send: (id) => world.call('GET', `/v1/products/${id}`, { token: world.demo.personal_access_token }),
  },
  'get-subscription': {
    ids: async () => {
      const other = world.demo.other_organization;
      const theirs = await world.call('POST', '/v1/subscriptions/', {
        token: other.personal_access_token,
        body: { product_id: other.free_product_id, customer_id: other.customer_id },
      });
      expect(theirs.status).toBe(201);
      return [['subscription of another organization', theirs.body.id as string]];
    },
    send: (id) => world.call('GET', `/v1/subscriptions/${id}`, { token: world.demo.personal_access_token }),
  },
  'get-client': registrationRow('GET'),
  'update-client': registrationRow('PUT'),
  'delete-client': registrationRow('DELETE'),
  'update-subscription': lifecycleRow('PATCH'),
  'revoke-subscription': lifecycleRow('DELETE'),
  'list-subscriptions': {
    refuses: emptyPage,
    ids: async () => {
      // The other organization's customer and product have subscriptions its own members see.
      const other = world.demo.other_organization;
      await world.call('POST', '/v1/subscriptions/', {
        token: other.personal_access_token,
        body: { product_id: other.free_product_id, customer_id: other.customer_id },
      });
      const theirs = await world.call('GET', `/v1/subscriptions/?customer_id=${other.customer_id}`, {
        token: other.personal_access_token,
      });
      expect(theirs.body.pagination.total_count).toBeGreaterThan(0);
      return [
        ['customer of another organization', `customer_id=${other.customer_id}`],
        ['product of another organization', `product_id=${other.free_product_id}`],
        ['another organization', `organization_id=${other.organization_id}`],
      ];
    },
    send: (filter) =>
      world.call('GET', `/v1/subscriptions/?${filter.includes('=') ? filter : `customer_id=${filter}`}`, {
        token: world.demo.personal_access_token,
      }),
  },
  'list-customer-subscriptions': {
    refuses: emptyPage,
    ids: async () => {
      // Products with subscriptions of other customers, in this organization and in another.
      await othersSubscriptions();
      return [
        ['product of the organization, subscribed by another customer', world.demo.free_product_id],
        ['product of another organization', world.demo.other_organization.free_product_id],
      ];
    },
    send: async (id) =>
      world.call('GET', `/v1/customer-portal/subscriptions/?product_id=${id}`, {
        token: await subscriberlessSession(),
      }),
  },
  'get-customer-subscription': portalRow('GET'),
  'update-customer-subscription': portalRow('PATCH'),
  'cancel-customer-subscription': portalRow('DELETE'),
  'create-customer': {
    namesNoResource:
      'a new customer names no existing resource; a foreign organization_id is covered by its own test',
  },
  'get-customer': {
    ids: async () => [
      ['customer of another organization', world.demo.other_organization.customer_id],
      ['deleted customer', deletedCustomerId],
    ],
    send: (id) => world.call('GET', `/v1/customers/${id}`, { token: world.demo.personal_access_token }),
  },
  'list-customers': {
    namesNoResource:
      'a list names no resource (a filter naming another tenant finds nothing): see the List Customers test above',
  },
  'get-customer-external': externalIdRow('GET'),
  'update-customer': customerRow('PATCH'),
  'update-customer-external': externalIdRow('PATCH'),
  'delete-customer': customerRow('DELETE'),
  'delete-customer-external': externalIdRow('DELETE'),
  'create-product': {
    namesNoResource:
      'a new product names no existing resource; a foreign organization_id is covered by its own test',
  },
  'list-products': {
    namesNoResource:
      'a list names no resource by id: another organization named in organization_id contributes nothing, exactly as an unknown one (products.test.ts)',
  },
  'update-product': {
    ids: async () => [
      ['product of another organization', world.demo.other_organization.free_product_id],
      ['deleted product', deletedProductId],
    ],
    send: (id) =>
      world.call('PATCH', `/v1/products/${id}`, {
        token: world.demo.personal_access_token,
        body: { name: 'taken over', is_archived: true },
      }),
  },
  'create-webhook-endpoint': {
    namesNoResource:
      'a new endpoint names no existing resource; a foreign organization_id is refused as an unknown one (webhook-endpoints.test.ts)',
  },
  'list-webhook-endpoints': {
    namesNoResource:
      "lists the caller's organizations only; an organization_id of another organization matches nothing (webhook-endpoints.test.ts)",
  },
  'get-webhook-endpoint': endpointRow('GET'),
  'update-webhook-endpoint': endpointRow('PATCH', '', { name: 'taken over' }),
  'reset-webhook-endpoint-secret': endpointRow('PATCH', '/secret'),
  authorize: {
    // Clients are applications any user may authorize: the id to keep from confirming is a deleted one.
    ids: async () => {
      const deleted = await registered(world.demo.personal_access_token);
      const removed = await world.call('DELETE', `/v1/oauth2/register/${deleted.client_id}`, {
        token: deleted.registration_access_token,
      });
      expect(removed.status).toBe(204);
      return [['deleted client', deleted.client_id]];
    },
    send: (id) =>
      world.call('GET', `/v1/oauth2/authorize?${authorizationRequest(id)}`, {
        token: world.demo.personal_access_token,
      }),
  },
  consent: {
    ids: async () => [['organization the user is not in', world.demo.other_organization.organization_id]],
    send: async (id) => {
      consentClient ??= await registered(world.demo.personal_access_token);
      return world.call('POST', '/v1/oauth2/consent', {
        token: world.demo.personal_access_token,
        body: {
          action: 'allow',
          organization_id: id,
          ...Object.fromEntries(new URLSearchParams(authorizationRequest(consentClient.client_id))),
        },
      });
    },
  },
  'request-token': {
    // Refresh tokens are a client's own: another client's, presented with this client's credentials,
    // is answered as an unknown one (codes: test/integration/oauth-token.test.ts).
    ids: async () => {
      const pat = world.demo.personal_access_token;
      const otherPat = world.demo.other_organization.personal_access_token;
      const sibling = await registerOAuthClient(world.call, pat);
      const foreign = await registerOAuthClient(world.call, otherPat);
      return [
        [
          'refresh token of another client of the same user',
          (await issueTokens(world.call, pat, sibling)).refresh_token as string,
        ],
        [
          "refresh token of another user's client",
          (await issueTokens(world.call, otherPat, foreign)).refresh_token as string,
        ],
      ];
    },
    send: async (id) => {
      tokenClient ??= await registerOAuthClient(world.call, world.demo.personal_access_token);
      return tokenRequest(world.call, tokenClient, { grant_type: 'refresh_token', refresh_token: id });
    },
  },
  'revoke-token': clientTokenRow('/v1/oauth2/revoke', {}),
  'introspect-token': clientTokenRow('/v1/oauth2/introspect', { active: false }),
  userinfo: { namesNoResource: 'it answers who the credential itself acts for' },
  'list-webhook-deliveries': {
    namesNoResource:
      "lists the caller's organizations' attempts only; an endpoint_id of another organization matches nothing (webhook-deliveries.test.ts)",
  },
  'redeliver-webhook-event': {
    ids: async () => {
      const other = world.demo.other_organization;
      const theirs = await seedWebhookEvent(world.table, other.organization_id, other.webhook_endpoint_id);
      // Past the 90 days of retention, not yet removed by TTL.
      const expired = await seedWebhookEvent(
        world.table,
        world.demo.organization_id,
        world.demo.webhook_endpoint_ids[1] as string,
        new Date(Date.now() - 91 * 86_400_000),
      );
      return [
        ['webhook event of another organization', theirs.id],
        ['webhook event past its retention', expired.id],
      ];
    },
    send: (id) =>
      world.call('POST', `/v1/webhooks/events/${id}/redeliver`, { token: world.demo.personal_access_token }),
  },
} satisfies Record<OperationName, Row>;

/** A change or delete by id: another organization's customer and a deleted one answer as unknown. */
function customerRow(method: 'PATCH' | 'DELETE'): Probe {
  return {
    ids: async () => [
      ['customer of another organization', world.demo.other_organization.customer_id],
      ['deleted customer', deletedCustomerId],
    ],
    send: (id) =>
      world.call(method, `/v1/customers/${id}`, {
        token: world.demo.personal_access_token,
        ...(method === 'PATCH' ? { body: { name: 'isolation' } } : {}),
      }),
  };
}

/** By external id: another organization's customer's and a deleted customer's answer as unknown ones. */
function externalIdRow(method: 'GET' | 'PATCH' | 'DELETE'): Probe {
  return {
    ids: async () => [
      ['external id of another organization’s customer', foreignExternalId],
      ['external id of a deleted customer', deletedExternalId],
    ],
    send: (id) =>
      world.call(method, `/v1/customers/external/${encodeURIComponent(id)}`, {
        token: world.demo.personal_access_token,
        ...(method === 'PATCH' ? { body: { name: 'isolation' } } : {}),
      }),
  };
}

/**
 * Revocation and introspection of another client's tokens (of the same user, of another user)
 * answer exactly as an unknown token: RFC 7009's 200 `{}`, RFC 7662's `{"active": false}`.
 */
function clientTokenRow(path: string, unknownAnswer: object): Probe {
  let mine: RegisteredClient | undefined;
  return {
    refuses: (reply) => {
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual(unknownAnswer);
    },
    ids: async () => {
      const pat = world.demo.personal_access_token;
      const otherPat = world.demo.other_organization.personal_access_token;
      const sibling = await issueTokens(world.call, pat, await registerOAuthClient(world.call, pat));
      const foreign = await issueTokens(
        world.call,
        otherPat,
        await registerOAuthClient(world.call, otherPat),
      );
      return [
        ['access token of another client of the same user', sibling.access_token],
        ['refresh token of another client of the same user', sibling.refresh_token as string],
        ["access token of another user's client", foreign.access_token],
      ];
    },
    send: async (id) => {
      mine ??= await registerOAuthClient(world.call, world.demo.personal_access_token, {
        token_endpoint_auth_method: 'client_secret_basic',
      });
      return world.call('POST', path, clientRequest(mine, { token: id }));
    },
  };
}

let tokenClient: RegisteredClient | undefined;
let consentClient: { client_id: string } | undefined;

function authorizationRequest(clientId: string): URLSearchParams {
  return new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: 'https://app.example/cb',
    scope: 'openid',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSW2w-cM',
    code_challenge_method: 'S256',
  });
}

describe('the isolation matrix: every operation, foreign and deleted ids answered as unknown ones', () => {
  it.each(operations.map((op) => [op.name, isolationMatrix[op.name] as Row] as const))(
    '%s',
    async (_, row) => {
      if ('namesNoResource' in row) {
        expect(row.namesNoResource.length).toBeGreaterThan(20);
        return;
      }
      const unknown = randomUUID();
      const baseline = await row.send(unknown);
      if (row.refuses) row.refuses(baseline);
      else expect(baseline.status).toBeGreaterThanOrEqual(400);
      const ids = await row.ids();
      expect(ids.length).toBeGreaterThan(0);
      for (const [label, id] of ids) {
        expect(observable(await row.send(id), [id]), label).toEqual(observable(baseline, [unknown]));
      }
    },
  );
});
