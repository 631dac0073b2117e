/**
 * Request quota counters (shared/http/quota.ts): one small item per bucket, fixed window and shard,
 * `QUOTA#<bucket>#<window>#<shard>`, its `used` raised by a lease of requests at a time and never
 * past the shard's share of the quota. Each window's items are new keys (so no item is written for
 * longer than one window) and expire through the table's TTL a minute after their window.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { run, type Table } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { attr, keys } from './table.ts';

/** How long a window's counters outlive it before the TTL removes them. */
const KEEP_AFTER_WINDOW_SECONDS = 60;

/**
 * Takes `amount` requests from one shard of a bucket's window, if the shard has that many left of
 * its `share`: one conditional UpdateItem (1 WRU; a refusal costs the same). False when it has not.
 */
export async function takeFromShard(
  table: Table,
  bucket: string,
  window: { index: number; endsAt: number },
  shard: number,
  share: number,
  amount: number,
): Promise<boolean> {
  try {
    await run(() =>
      table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: keys.quota(bucket, window.index, shard),
          UpdateExpression: 'ADD #used :amount SET #ttl = if_not_exists(#ttl, :ttl)',
          ConditionExpression: 'attribute_not_exists(#used) OR #used <= :room',
          ExpressionAttributeNames: { '#used': 'used', '#ttl': attr.ttl },
          ExpressionAttributeValues: {
            ':amount': amount,
            ':room': share - amount,
            ':ttl': window.endsAt + KEEP_AFTER_WINDOW_SECONDS,
          },
        }),
      ),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** IAM (shared/data/grants.ts): every HTTP operation counts its requests. */
export const access = {
  takeFromShard: [{ actions: ['dynamodb:UpdateItem'], leadingKeys: ['quota'] }],
} as const satisfies DataAccess;
