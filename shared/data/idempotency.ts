/**
 * Idempotency records: one item per (operation, credential, key), claimed with
 * a create-or-expired conditional write that also returns the existing record,
 * so a replay costs no extra round trip.
 */
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { run, type Table } from './dynamo.ts';
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
    return { outcome: 'in_progress' };
  }
}

/** Stores the answer of a claimed request; a claim taken over meanwhile is left alone. */
export async function completeIdempotencyKey(
  table: Table,
  key: Key,
  requestHash: string,
  sealedResponse: string,
): Promise<void> {
  try {
    await run(() =>
      table.doc.send(
        new UpdateCommand({
          TableName: table.name,
          Key: key,
          UpdateExpression: 'SET #status = :completed, #response = :response REMOVE lease_until',
          ConditionExpression: '#status = :inProgress AND request_hash = :hash',
          ExpressionAttributeNames: { '#status': 'status', '#response': 'response' },
          ExpressionAttributeValues: {
            ':completed': 'completed',
            ':inProgress': 'in_progress',
            ':response': sealedResponse,
            ':hash': requestHash,
          },
        }),
      ),
    );
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

/** IAM (shared/data/grants.ts): claim (put), complete (update), release after a failure (delete). */
export const access = {
  idempotencyKey: [
    {
      actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
      leadingKeys: ['idempotency'],
    },
  ],
} as const satisfies DataAccess;
