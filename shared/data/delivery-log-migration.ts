/**
 * Moving a deployed stack's delivery log to the sharded layout (`shared/data/deliveries.ts`): the
 * list entries written before it (`LIST#DELIVERY#<owner>[#succeeded=<b>]`, SK `created_at#…`, each a
 * full copy of its attempt, payload included), their 16 count shards (`#COUNT#<0-15>`) and the
 * relay's expiry tombstones (`#EXPIRED#…`) are read once (one Scan, an operator's one-off), each
 * attempt of an organization's list is entered in its four sharded lists and their day counts (one
 * transaction per attempt, its first entry created only if absent: a second run, or a run after a
 * crash, enters nothing twice), then every old item is deleted. The attempts themselves
 * (`WHEVENT#…` / `ATTEMPT#…`) stay where they are and keep their own payload, which the reader
 * shows. `npm run admin -- webhook migrate-delivery-log`.
 */
import { BatchWriteCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { legacyEntryWrites } from './deliveries.ts';
import { run, type Table, transact } from './dynamo.ts';
import { type DeliveryAttemptRecord, record } from './records.ts';
import { attr, type Key, LIST_COUNT_PREFIX, partitions } from './table.ts';

const NEW_PARTITION = /#S\d+$/;

export interface DeliveryLogMigration {
  /** Attempts entered in the sharded lists. */
  migrated: number;
  /** Attempts found entered already (an earlier run), or past their retention. */
  skipped: number;
  /** Old items deleted (entries of every list and view, counts, tombstones). */
  deleted: number;
}

export async function migrateDeliveryLog(table: Table, now: Date): Promise<DeliveryLogMigration> {
  const old: Record<string, unknown>[] = [];
  let next: Record<string, unknown> | undefined;
  do {
    const page = await run(() =>
      table.doc.send(
        new ScanCommand({
          TableName: table.name,
          FilterExpression: 'begins_with(PK, :list)',
          ExpressionAttributeValues: { ':list': partitions.deliveryList },
          ConsistentRead: true,
          ...(next ? { ExclusiveStartKey: next } : {}),
        }),
      ),
    );
    for (const stored of page.Items ?? []) {
      const pk = String(stored.PK);
      const sk = String(stored.SK);
      const legacyCount =
        sk.startsWith(LIST_COUNT_PREFIX) && /^\d+$/.test(sk.slice(LIST_COUNT_PREFIX.length));
      if (NEW_PARTITION.test(pk) && !legacyCount) continue;
      if (sk.startsWith('created_at#') || sk.startsWith('#EXPIRED#') || legacyCount) old.push(stored);
    }
    next = page.LastEvaluatedKey;
  } while (next);

  const report: DeliveryLogMigration = { migrated: 0, skipped: 0, deleted: 0 };
  const epoch = Math.floor(now.getTime() / 1000);
  for (const stored of old) {
    if (!String(stored.SK).startsWith('created_at#')) continue;
    const attempt = record<DeliveryAttemptRecord & { entity?: string; [attr.ttl]?: number }>(stored);
    // The organization's own list holds each attempt once; its other lists' entries are copies.
    if (stored.PK !== `${partitions.deliveryList}${attempt.organization_id}`) continue;
    if (Number(attempt[attr.ttl] ?? Number.POSITIVE_INFINITY) <= epoch) {
      report.skipped++;
      continue;
    }
    const { entity: _, [attr.ttl]: __, ...clean } = attempt;
    try {
      await transact(table, legacyEntryWrites(table, clean));
      report.migrated++;
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
      report.skipped++;
    }
  }
  const keys: Key[] = old.map((stored) => ({ PK: String(stored.PK), SK: String(stored.SK) }));
  for (let i = 0; i < keys.length; i += 25) {
    let pending = keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } }));
    while (pending.length > 0) {
      const batch = pending;
      const result = await run(() =>
        table.doc.send(new BatchWriteCommand({ RequestItems: { [table.name]: batch } })),
      );
      pending = (result.UnprocessedItems?.[table.name] ?? []) as typeof pending;
    }
    report.deleted += Math.min(25, keys.length - i);
  }
  return report;
}
