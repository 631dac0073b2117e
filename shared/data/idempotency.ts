/**
 * Idempotency records: one item per (operation, credential, key), claimed with
 * a create-or-expired conditional write that also returns the existing record,
 * so a replay costs no extra round trip.
 *
 * An answer too large for one item (DynamoDB's 400 KB: a subscription at every input limit embeds
 * its customer and product, ≈ 350 KB, sealed and base64url-encoded ≈ 470 KB; parts from 250,000
 * characters) is stored in parts:
 * the record keeps `response_parts`, the sealed text follows in items `<key>#PART#<n>` of the same
 * partition, written in one transaction with the completion, so a record is never completed
 * without its answer; a replay of such an answer reads its parts with one more Query. Without the
 * parts the completion failed, the claim stayed in progress until its lease ended, and the retry
 * after it created the object again.
 */
import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { run, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { attr, type Key } from './table.ts';

export type Claim =
  | { outcome: 'claimed' }
  | { outcome: 'replay'; sealedResponse: string }
  | { outcome: 'in_progress' }
  | { outcome: 'mismatch' };

export interface ClaimRequest {
  key: Key;
  requestHash: string;
  now: Date;
  /** How long an unfinished claim blocks others; past it a retry may take over (the first attempt died). */
  leaseMs: number;
  /** How long a finished answer is replayed (DynamoDB TTL removes the record some time after). */
  ttlSeconds: number;
}

export async function claimIdempotencyKey(table: Table, claim: ClaimRequest): Promise<Claim> {
  const nowMs = claim.now.getTime();
  try {
    await run(() =>
      table.doc.send(
        new PutCommand({
          TableName: table.name,
          Item: {
            ...claim.key,
            entity: 'idempotency',
            status: 'in_progress',
            request_hash: claim.requestHash,
            lease_until: nowMs + claim.leaseMs,
            created_at: claim.now.toISOString(),
            [attr.ttl]: Math.floor(nowMs / 1000) + claim.ttlSeconds,
          },
          // TTL deletion is lazy, so expiry is checked here too.
          ConditionExpression:
            'attribute_not_exists(PK) OR #ttl < :nowSeconds OR (#status = :inProgress AND lease_until < :nowMs)',
          ExpressionAttributeNames: { '#ttl': attr.ttl, '#status': 'status' },
          ExpressionAttributeValues: {
            ':nowSeconds': Math.floor(nowMs / 1000),
            ':nowMs': nowMs,
            ':inProgress': 'in_progress',
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
    return { outcome: 'claimed' };
  } catch (error) {
    if (!(error instanceof ConditionFailed) || !error.item) throw error;
    const existing = error.item;
    if (existing.request_hash !== claim.requestHash) return { outcome: 'mismatch' };
    if (existing.status === 'completed' && typeof existing.response === 'string') {
      return { outcome: 'replay', sealedResponse: existing.response };
    }
    if (existing.status === 'completed' && typeof existing.response_parts === 'number') {
      return {
        outcome: 'replay',
        sealedResponse: await readParts(table, claim.key, existing.response_parts),
      };
    }
    return { outcome: 'in_progress' };
  }
}

/**
 * The largest sealed answer kept in the record itself; a larger one is split into parts of this
 * size (a part item: its key, about 200 bytes, and the text, well under 400 KB). At most
 * `MAX_PARTS` parts, so that the completing transaction stays under 100 items and 4 MB: answers of
 * up to 3,500,000 characters sealed (every answer of this API is a single object, at most ≈ 0.5 MB).
 */
export const RESPONSE_PART_CHARS = 250_000;
const MAX_PARTS = 14;
const PART = '#PART#';
const partKey = (key: Key, index: number): Key => ({
  PK: key.PK,
  SK: `${key.SK}${PART}${String(index).padStart(3, '0')}`,
});

/** The parts of a split answer, in order (one strongly consistent Query of the record's partition). */
async function readParts(table: Table, key: Key, count: number): Promise<string> {
  const result = await run(() =>
    table.doc.send(
      new QueryCommand({
        TableName: table.name,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :parts)',
        ExpressionAttributeValues: { ':pk': key.PK, ':parts': `${key.SK}${PART}` },
        ConsistentRead: true,
      }),
    ),
  );
  const parts = (result.Items ?? []).slice(0, count).map((part) => String(part.response_part));
  if (parts.length !== count) throw new Error('idempotency record misses parts of its answer');
  return parts.join('');
}

/** Stores the answer of a claimed request; a claim taken over meanwhile is left alone. */
export async function completeIdempotencyKey(
  table: Table,
  key: Key,
  requestHash: string,
  sealedResponse: string,
  /** When the parts expire (epoch seconds): the record's own TTL. */
  expiresAt?: number,
): Promise<void> {
  const split = sealedResponse.length > RESPONSE_PART_CHARS;
  const parts: string[] = [];
  for (let at = 0; split && at < sealedResponse.length; at += RESPONSE_PART_CHARS) {
    parts.push(sealedResponse.slice(at, at + RESPONSE_PART_CHARS));
  }
  if (parts.length > MAX_PARTS) throw new RangeError('answer too large to keep for replay');
  const completion = {
    TableName: table.name,
    Key: key,
    UpdateExpression: split
      ? 'SET #status = :completed, response_parts = :parts REMOVE lease_until'
      : 'SET #status = :completed, #response = :response REMOVE lease_until',
    ConditionExpression: '#status = :inProgress AND request_hash = :hash',
    ExpressionAttributeNames: (split
      ? { '#status': 'status' }
      : { '#status': 'status', '#response': 'response' }) as Record<string, string>,
    ExpressionAttributeValues: {
      ':completed': 'completed',
      ':inProgress': 'in_progress',
      ':hash': requestHash,
      ...(split ? { ':parts': parts.length } : { ':response': sealedResponse }),
    },
  };
  try {
    if (!split) {
      await run(() => table.doc.send(new UpdateCommand(completion)));
      return;
    }
    await transact(table, [
      { Update: completion },
      ...parts.map((part, index) => ({
        Put: {
          TableName: table.name,
          Item: {
            ...partKey(key, index),
            entity: 'idempotency_part',
            response_part: part,
            ...(expiresAt === undefined ? {} : { [attr.ttl]: expiresAt }),
          },
        },
      })),
    ]);
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}

/** Frees a claim whose request failed, so that a retry runs it again. */
export async function releaseIdempotencyKey(table: Table, key: Key, requestHash: string): Promise<void> {
  try {
    await run(() =>
      table.doc.send(
        new DeleteCommand({
          TableName: table.name,
          Key: key,
          ConditionExpression: '#status = :inProgress AND request_hash = :hash',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':inProgress': 'in_progress', ':hash': requestHash },
        }),
      ),
    );
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}

/**
 * IAM (shared/data/grants.ts): claim (put), complete (update, and the parts of a large answer put
 * in the same transaction), release after a failure (delete).
 */
export const access = {
  idempotencyKey: [
    {
      actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
      leadingKeys: ['idempotency'],
    },
  ],
  /**
   * The replay of an answer kept in parts reads them (query): only operations whose answer can pass
   * `RESPONSE_PART_CHARS` sealed (≈ 185 KB) hold it: Create Subscription (its customer and product
   * embedded); a product, customer or client answers at most ≈ 140 KB.
   */
  idempotencyLargeAnswer: [{ actions: ['dynamodb:Query'], leadingKeys: ['idempotency'] }],
} as const satisfies DataAccess;
