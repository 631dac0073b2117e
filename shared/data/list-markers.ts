/**
 * Which organizations' lists have left their old, unsharded partitions for good (`LISTS_MIGRATED`
 * on the `ORG#<org>` item, one marker per list family), so that a page of theirs reads only the 16
 * shards: not the old partition's 16 count items (16 read units on one partition per page, a read
 * ceiling of ≈ 187 pages/s per tenant) nor its entries' or segments' Queries.
 *
 * A page learns the markers from a per-container cache of the organizations known to be marked,
 * and for the others from one eventually consistent BatchGetItem of their items before the lists
 * are read. Both are safe in one direction only, and that is the one that matters: the marker is
 * never removed, so "marked" is cached for the container's life; an answer of "not marked" (a stale
 * read, a key DynamoDB left unprocessed) only makes the page read the old partition too, which
 * today's lists do anyway, so it is never cached: an organization marked a moment ago is read
 * without its old partition from its next page on.
 */
import { BatchGetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { queryAll, run, type Table } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { type Key, keys, LIST_COUNT_PREFIX, LISTS_MIGRATED, type ListFamily } from './table.ts';

/** An organization's item says this family's lists hold nothing in their old partitions. */
export const listsMigrated = (
  organization: Record<string, unknown> | undefined,
  family: ListFamily,
): boolean => organization?.[LISTS_MIGRATED[family].attribute] === LISTS_MIGRATED[family].value;

/** BatchGetItem takes at most 100 keys per call. */
const BATCH_KEYS = 100;
/** Past this many organizations the cache starts again (each entry is a few bytes; a bound all the same). */
const CACHE_MAX = 10_000;

/** Organizations known marked, per table, by family: only ever added to (the marker is never removed). */
const known = new Map<string, Set<ListFamily>>();
const cacheKey = (table: Table, organizationId: string) => `${table.name}\u0000${organizationId}`;

/**
 * Forget what the cache knows of these organizations: only for tests, which remove a marker to stage
 * an organization from before it (production never removes one).
 */
export function forgetListMarkers(table: Table, organizationIds: readonly string[]): void {
  for (const organizationId of organizationIds) known.delete(cacheKey(table, organizationId));
}

/**
 * Forget every organization the cache knows: only for tests that judge a scenario's DynamoDB calls
 * (the IAM suites), so that each run starts as a cold container and reads the markers it needs.
 */
export function forgetAllListMarkers(): void {
  known.clear();
}

/**
 * The organizations among these whose `family` lists are migrated: those the cache knows, and of the
 * rest one eventually consistent BatchGetItem of their items (per 100; their markers only). Every
 * marker found is cached, of every family, so a later page of another list costs nothing more.
 */
export async function markedOrganizations(
  table: Table,
  family: ListFamily,
  organizationIds: readonly string[],
): Promise<ReadonlySet<string>> {
  const marked = new Set<string>();
  const unknown: string[] = [];
  for (const organizationId of new Set(organizationIds)) {
    if (known.get(cacheKey(table, organizationId))?.has(family)) marked.add(organizationId);
    else unknown.push(organizationId);
  }
  const families = Object.keys(LISTS_MIGRATED) as ListFamily[];
  for (let from = 0; from < unknown.length; from += BATCH_KEYS) {
    const batch = unknown.slice(from, from + BATCH_KEYS);
    const result = await run(() =>
      table.doc.send(
        new BatchGetCommand({
          RequestItems: {
            [table.name]: {
              Keys: batch.map((organizationId) => keys.organization(organizationId)),
              // Eventually consistent, half a unit each: a stale answer is only "not yet".
              ConsistentRead: false,
              ProjectionExpression: ['id', ...families.map((f) => LISTS_MIGRATED[f].attribute)].join(', '),
            },
          },
        }),
      ),
    );
    // A key left unprocessed is read as unmarked: its old partition is read too, as before.
    for (const stored of result.Responses?.[table.name] ?? []) {
      const organizationId = String(stored.id);
      const found = families.filter((f) => listsMigrated(stored, f));
      if (found.length === 0) continue;
      if (known.size >= CACHE_MAX) known.clear();
      known.set(cacheKey(table, organizationId), new Set(found));
      if (found.includes(family)) marked.add(organizationId);
    }
  }
  return marked;
}

/**
 * For a family's migration: whether these old list partitions hold nothing any more, read strongly
 * consistent: no entry, only count items (and segment registry items) at 0.
 */
export async function oldListsHoldNothing(table: Table, partitionKeys: readonly string[]): Promise<boolean> {
  for (const pk of partitionKeys) {
    // A migration's check, after its moves: the old partitions hold little or nothing by then.
    const items = await queryAll(table, {
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ConsistentRead: true,
    });
    const left = items.some(
      (stored) => !String(stored.SK).startsWith(LIST_COUNT_PREFIX) || Number(stored.entry_count ?? 0) !== 0,
    );
    if (left) return false;
  }
  return true;
}

/** For a family's migration: mark the organization (conditioned on its item existing; never unmarked). */
export async function markListsMigrated(
  table: Table,
  family: ListFamily,
  organizationId: string,
): Promise<void> {
  const key: Key = keys.organization(organizationId);
  await run(() =>
    table.doc.send(
      new UpdateCommand({
        TableName: table.name,
        Key: key,
        UpdateExpression: 'SET #marker = :migrated',
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeNames: { '#marker': LISTS_MIGRATED[family].attribute },
        ExpressionAttributeValues: { ':migrated': LISTS_MIGRATED[family].value },
      }),
    ),
  );
}

/** IAM (shared/data/grants.ts). */
export const access = {
  /** The markers of the organizations the cache does not know marked: their items, in one batch. */
  markedOrganizations: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['organization'] }],
} as const satisfies DataAccess;
