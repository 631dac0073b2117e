/**
 * Webhook endpoints: the endpoint item and its entries in the organization's webhook endpoint list
 * (`shared/data/listing.ts`), always written together in one transaction. Every change after the
 * create is conditioned on the revision it was computed from, so the list entries it deletes are the
 * ones that exist and none is left behind by a concurrent change; a change that loses the race is
 * reported as `EndpointChanged`, and the service decides again on fresh data.
 *
 * Each write is one TransactWriteItems, so that the delivery pipeline's outbox item (an event Put)
 * can be appended to it.
 */
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { type CapWrite, access as capsAccess, transactClaiming, transactReleasing } from './caps.ts';
import { createOnly, run, type Table, type TransactItem, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import {
  delistedWrites,
  type Listing,
  listedCount,
  listedWrites,
  listPage,
  readRange,
  relistedWrites,
  type SortCriterion,
} from './listing.ts';
import { item, record, type WebhookEndpointRecord } from './records.ts';
import { gsi1, keys, ownerKeys } from './table.ts';

export type WebhookEndpointSortField = 'created_at' | 'url' | 'name';

/** One entry per sort field in `LIST#WEBHOOK#<organization>`, each a full copy (the secrets sealed). */
export const webhookEndpointListing: Listing<WebhookEndpointRecord, WebhookEndpointSortField> = {
  partition: 'webhookEndpointList',
  entity: 'webhook_endpoint_entry',
  owner: (endpoint) => endpoint.organization_id,
  fields: {
    created_at: (endpoint) => ({ time: endpoint.created_at }),
    url: (endpoint) => ({ text: endpoint.url }),
    name: (endpoint) => ({ text: endpoint.name }),
  },
};

/** The endpoint changed (or was deleted) since it was read: the write applied nothing. */
export class EndpointChanged extends Error {
  constructor() {
    super('webhook endpoint changed since it was read');
    this.name = 'EndpointChanged';
  }
}

/**
 * A stored endpoint. Endpoints written before the delivery fields existed read with their defaults
 * (no previous secret, no failures, revision 0: no revision attribute).
 */
export function webhookEndpointRecord(stored: Record<string, unknown>): WebhookEndpointRecord {
  const endpoint = record<WebhookEndpointRecord & { deletion_id?: string }>(stored);
  const { deletion_id: _deletion, ...rest } = endpoint;
  return {
    ...rest,
    previous_secret_ciphertext: endpoint.previous_secret_ciphertext ?? null,
    previous_secret_expires_at: endpoint.previous_secret_expires_at ?? null,
    disabled_reason:
      endpoint.disabled_reason ?? (endpoint.enabled || endpoint.deleted_at ? null : 'disabled_by_user'),
    failure_count: endpoint.failure_count ?? 0,
    revision: endpoint.revision ?? 0,
  };
}

const endpointItem = (endpoint: WebhookEndpointRecord) =>
  item(
    {
      ...keys.webhookEndpoint(endpoint.id),
      ...gsi1.ownedBy(
        ownerKeys.organization(endpoint.organization_id),
        'WEBHOOK',
        endpoint.created_at,
        endpoint.id,
      ),
    },
    'webhook_endpoint',
    endpoint,
  );

/** The condition every change carries: still live, still at the revision it was computed from. */
function unchangedSince(seen: WebhookEndpointRecord) {
  return seen.revision === 0
    ? {
        ConditionExpression: 'attribute_exists(PK) AND deleted_at = :null AND attribute_not_exists(revision)',
        ExpressionAttributeValues: { ':null': null },
      }
    : {
        ConditionExpression: 'deleted_at = :null AND revision = :seen',
        ExpressionAttributeValues: { ':null': null, ':seen': seen.revision },
      };
}

/** A changed write's transaction; the first item is the endpoint's own, the one that can refuse. */
async function transactChange(
  table: Table,
  ...args: [TransactItem[]] | [CapWrite, TransactItem[]]
): Promise<void> {
  try {
    if (args.length === 1) await transact(table, args[0]);
    else await transactReleasing(table, ...args);
  } catch (error) {
    if (error instanceof ConditionFailed && error.reasons[0] === 'ConditionalCheckFailed') {
      throw new EndpointChanged();
    }
    throw error;
  }
}

/** The organization's endpoint cap; its live endpoints counted from its list when it has no counter. */
const endpointCap = (table: Table, organizationId: string): CapWrite => ({
  cap: 'webhookEndpoints',
  owner: organizationId,
  liveCount: () => listedCount(table, 'webhookEndpointList', organizationId),
});

/**
 * A new endpoint, its list entries and count, and the organization's cap counter up by one, in one
 * transaction: at the cap (`CAPS.webhookEndpoints`) it is refused with `LimitReached`.
 */
export async function insertWebhookEndpoint(table: Table, endpoint: WebhookEndpointRecord): Promise<void> {
  await transactClaiming(
    table,
    endpointCap(table, endpoint.organization_id),
    [
      { Put: createOnly(table, endpointItem(endpoint)) },
      ...listedWrites(table, webhookEndpointListing, endpoint),
    ],
    'webhook endpoints per organization',
  );
}

/** Strongly consistent: a change is computed from this read and conditioned on its revision. */
export async function getWebhookEndpoint(
  table: Table,
  endpointId: string,
): Promise<WebhookEndpointRecord | undefined> {
  const result = await run(() =>
    table.doc.send(
      new GetCommand({ TableName: table.name, Key: keys.webhookEndpoint(endpointId), ConsistentRead: true }),
    ),
  );
  return result.Item ? webhookEndpointRecord(result.Item) : undefined;
}

/**
 * The writes that replace a live endpoint read at `before` by `after` (same id and owner): the
 * endpoint, conditioned on its revision (the first item, the one that can refuse), and its list
 * entries. For a transaction of its own (`replaceWebhookEndpoint`) or of the delivery pipeline's.
 */
export function endpointReplacement(
  table: Table,
  before: WebhookEndpointRecord,
  after: WebhookEndpointRecord,
): TransactItem[] {
  return [
    { Put: { TableName: table.name, Item: endpointItem(after), ...unchangedSince(before) } },
    ...relistedWrites(table, webhookEndpointListing, before, after),
  ];
}

/** Replaces a live endpoint read at `before` by `after` (same id and owner), its list entries with it. */
export async function replaceWebhookEndpoint(
  table: Table,
  before: WebhookEndpointRecord,
  after: WebhookEndpointRecord,
): Promise<void> {
  await transactChange(table, endpointReplacement(table, before, after));
}

/**
 * Soft delete of an endpoint read at `endpoint`: marked deleted and disabled, its list entries
 * removed and the count lowered, in one transaction. Of concurrent deletes exactly one applies; the
 * others find it changed.
 */
export async function softDeleteWebhookEndpoint(
  table: Table,
  endpoint: WebhookEndpointRecord,
  now: string,
): Promise<void> {
  const condition = unchangedSince(endpoint);
  await transactChange(table, endpointCap(table, endpoint.organization_id), [
    {
      Update: {
        TableName: table.name,
        Key: keys.webhookEndpoint(endpoint.id),
        UpdateExpression:
          'SET deleted_at = :now, modified_at = :now, enabled = :false, disabled_reason = :null, revision = :next',
        ConditionExpression: condition.ConditionExpression,
        ExpressionAttributeValues: {
          ...condition.ExpressionAttributeValues,
          ':now': now,
          ':false': false,
          ':next': endpoint.revision + 1,
        },
      },
    },
    ...delistedWrites(table, webhookEndpointListing, endpoint),
  ]);
}

/**
 * The endpoint read at `before` with its secrets sealed again (`after`: only the ciphertexts and the
 * revision differ), on the revision read. A live one's list entries are written with it; a deleted
 * one has none.
 */
export async function resealWebhookEndpoint(
  table: Table,
  before: WebhookEndpointRecord,
  after: WebhookEndpointRecord,
): Promise<void> {
  if (before.deleted_at === null) return replaceWebhookEndpoint(table, before, after);
  await transactChange(table, [
    {
      Put: {
        TableName: table.name,
        Item: endpointItem(after),
        ConditionExpression:
          before.revision === 0
            ? 'deleted_at = :deleted AND attribute_not_exists(revision)'
            : 'deleted_at = :deleted AND revision = :seen',
        ExpressionAttributeValues: {
          ':deleted': before.deleted_at,
          ...(before.revision === 0 ? {} : { ':seen': before.revision }),
        },
      },
    },
  ]);
}

/**
 * Every endpoint of the table, deleted ones included, a page at a time: for the operator's re-seal
 * after a key-set rotation (`npm run admin -- webhook rotate-keys`), never for a request. A Scan, so
 * no function is granted it.
 */
export async function* scanWebhookEndpoints(table: Table): AsyncGenerator<WebhookEndpointRecord[]> {
  let start: Record<string, unknown> | undefined;
  do {
    const page = await run(() =>
      table.doc.send(
        new ScanCommand({
          TableName: table.name,
          FilterExpression: 'entity = :entity',
          ExpressionAttributeValues: { ':entity': 'webhook_endpoint' },
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      ),
    );
    yield (page.Items ?? []).map(webhookEndpointRecord);
    start = page.LastEvaluatedKey;
  } while (start);
}

/** A page of the organizations' live endpoints in the requested order, and their number. */
export function listWebhookEndpointPage(
  table: Table,
  organizationIds: readonly string[],
  criteria: readonly SortCriterion<WebhookEndpointSortField>[],
  offset: number,
  limit: number,
) {
  return listPage(table, webhookEndpointListing, organizationIds, criteria, offset, limit);
}

/**
 * Every live endpoint of an organization, from its list (the `created_at` entries of
 * `LIST#WEBHOOK#<organization>`: one strongly consistent Query, paged by DynamoDB): the relay picks
 * an event's targets among them. Strongly consistent, so an endpoint created or deleted a moment
 * before an event was relayed is seen as it is.
 */
export async function organizationWebhookEndpoints(
  table: Table,
  organizationId: string,
): Promise<WebhookEndpointRecord[]> {
  const entries = await readRange(table, webhookEndpointListing, organizationId, 'created_at#');
  return entries.map((entry) => webhookEndpointRecord(entry as unknown as Record<string, unknown>));
}

/**
 * IAM (shared/data/grants.ts). Built by a pure call: it spreads the cap counter's grant, and a
 * spread would otherwise keep the declarations in every bundle that imports this module.
 */
export const access = /* @__PURE__ */ (() =>
  ({
    /**
     * One transaction: the endpoint, its list entries (one per sort field), the list's count and the
     * organization's cap counter (seeded, when missing, from the list's count).
     */
    insertWebhookEndpoint: [
      { actions: ['dynamodb:PutItem'], leadingKeys: ['webhookEndpoint', 'webhookEndpointList'] },
      { actions: ['dynamodb:UpdateItem', 'dynamodb:Query'], leadingKeys: ['webhookEndpointList'] },
      ...capsAccess.capCounter,
    ],
    getWebhookEndpoint: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['webhookEndpoint'] }],
    /**
     * One transaction replaces the endpoint (on the revision read) and its list entries, deleting the
     * entries whose sort key moved (url, name).
     */
    replaceWebhookEndpoint: [
      { actions: ['dynamodb:PutItem'], leadingKeys: ['webhookEndpoint', 'webhookEndpointList'] },
      { actions: ['dynamodb:DeleteItem'], leadingKeys: ['webhookEndpointList'] },
    ],
    /** `replaceWebhookEndpoint` when no sort key moves (a new secret): the endpoint and its entries, same keys. */
    replaceWebhookEndpointInPlace: [
      { actions: ['dynamodb:PutItem'], leadingKeys: ['webhookEndpoint', 'webhookEndpointList'] },
    ],
    /** One transaction marks it deleted, removes its list entries and lowers the list's count and the cap counter. */
    softDeleteWebhookEndpoint: [
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['webhookEndpoint', 'webhookEndpointList'] },
      { actions: ['dynamodb:DeleteItem', 'dynamodb:Query'], leadingKeys: ['webhookEndpointList'] },
      ...capsAccess.capCounter,
    ],
    /** Per organization, one query of the list's count shards and one of its entries (shared/data/listing.ts). */
    listWebhookEndpointPage: [{ actions: ['dynamodb:Query'], leadingKeys: ['webhookEndpointList'] }],
    /** The organization's endpoints, from its endpoint list (the relay). */
    organizationWebhookEndpoints: [{ actions: ['dynamodb:Query'], leadingKeys: ['webhookEndpointList'] }],
  }) as const satisfies DataAccess)();
