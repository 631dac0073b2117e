/**
 * Caps on how many of a kind an owner has (shared/domain/limits.ts `CAPS`), race-free: one counter
 * item per owner and kind (`CAP#<kind>#<owner>`, attribute `used`), moved in the same transaction
 * as the create (up, conditioned on being under the cap) or the delete (down). Of concurrent
 * creates at the cap's edge exactly as many succeed as there is room: DynamoDB serialises the
 * transactions on the counter item. Creates of these kinds are rare, so one item per owner is no
 * hot item.
 *
 * An owner whose counter does not exist yet (data from before the counter) gets it seeded from its
 * live count, read before the write: the write uses the seed only while the item is missing
 * (`if_not_exists`), so concurrent first writes still count each other.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed, LimitReached } from '../domain/errors.ts';
import { CAPS, type CapName } from '../domain/limits.ts';
import { run, type Table, type TransactItem } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { keys } from './table.ts';

/**
 * The counter's value, or (when it does not exist yet) the live count to seed it with. Call it inside
 * `withinCap`: a missing counter whose live count is already at the cap is refused here.
 */
export async function capSeed(
  table: Table,
  cap: CapName,
  owner: string,
  liveCount: () => Promise<number>,
): Promise<number> {
  const { kind } = CAPS[cap];
  const result = await run(() =>
    table.doc.send(
      new GetCommand({
        TableName: table.name,
        Key: keys.cap(kind, owner),
        ConsistentRead: true,
        ProjectionExpression: '#used',
        ExpressionAttributeNames: { '#used': 'used' },
      }),
    ),
  );
  const used = result.Item?.used;
  if (typeof used === 'number') return used;
  const seed = await liveCount();
  // The write's condition sees only the item: a missing counter seeded at the cap is refused here.
  if (seed >= CAPS[cap].limit) throw new ConditionFailed(['ConditionalCheckFailed']);
  return seed;
}

/** One more of `cap` for `owner`, refused (ConditionFailed) at the cap. */
export function capClaim(table: Table, cap: CapName, owner: string, seed: number): TransactItem {
  const { kind, limit } = CAPS[cap];
  return {
    Update: {
      TableName: table.name,
      Key: keys.cap(kind, owner),
      UpdateExpression: 'SET #used = if_not_exists(#used, :seed) + :one',
      ConditionExpression: 'attribute_not_exists(#used) OR #used < :limit',
      ExpressionAttributeNames: { '#used': 'used' },
      ExpressionAttributeValues: { ':seed': seed, ':one': 1, ':limit': limit },
    },
  };
}

/** One fewer of `cap` for `owner` (never below zero). */
export function capRelease(table: Table, cap: CapName, owner: string, seed: number): TransactItem {
  const { kind } = CAPS[cap];
  return {
    Update: {
      TableName: table.name,
      Key: keys.cap(kind, owner),
      UpdateExpression: 'SET #used = if_not_exists(#used, :seed) - :one',
      ExpressionAttributeNames: { '#used': 'used' },
      ExpressionAttributeValues: { ':seed': Math.max(seed, 1), ':one': 1 },
    },
  };
}

/**
 * A transaction with a cap claim as its last item: the claim's refusal becomes `LimitReached`
 * (`what`: the cap in words), any other refusal is passed on.
 */
export async function withinCap(
  cap: CapName,
  what: string,
  write: () => Promise<void>,
  options: { oauth?: boolean } = {},
): Promise<void> {
  try {
    await write();
  } catch (error) {
    if (error instanceof ConditionFailed && error.reasons.at(-1) === 'ConditionalCheckFailed') {
      throw new LimitReached(what, CAPS[cap].limit, options.oauth);
    }
    throw error;
  }
}

/** IAM (shared/data/grants.ts): the counter read (seed) and moved in the create's or delete's transaction. */
export const access = {
  capCounter: [{ actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], leadingKeys: ['cap'] }],
} as const satisfies DataAccess;
