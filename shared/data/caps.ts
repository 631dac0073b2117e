/**
 * Caps on how many of a kind an owner has (shared/domain/limits.ts `CAPS`), race-free: one counter
 * item per owner and kind (`CAP#<kind>#<owner>`, attribute `used`), moved in the same transaction
 * as the create (up, conditioned on being under the cap) or the delete (down). Of concurrent
 * creates at the cap's edge exactly as many succeed as there is room: DynamoDB serialises the
 * transactions on the counter item. Creates of these kinds are rare, so one item per owner is no
 * hot item.
 *
 * The counter is written at 0 with its owner (`capCounterStart`, in the organization's or user's
 * creation), so a create or delete is its one transaction, nothing read first: the counter's move
 * is conditioned on the counter existing. Only an owner from before the counters has none: its
 * transaction is refused at the counter, which then tells (ReturnValuesOnConditionCheckFailure)
 * "missing" (no old item) from "at the cap" (the old item); a missing one is seeded from the
 * owner's live count and the transaction sent once more, the seed used only while the item is
 * still missing (`if_not_exists`), so concurrent first writes still count each other.
 */
import { ConditionFailed, LimitReached } from '../domain/errors.ts';
import { CAPS, type CapName } from '../domain/limits.ts';
import { createOnly, type Table, type TransactItem, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { keys } from './table.ts';

/** The counter of a new owner (an organization's or user's creation writes it): none of `cap` yet. */
export function capCounterStart(table: Table, cap: CapName, owner: string): TransactItem {
  return { Put: createOnly(table, { ...keys.cap(CAPS[cap].kind, owner), used: 0 }) };
}

/**
 * One more of `cap` for `owner`, refused at the cap. Without `seed`: only on an existing counter
 * (its old item comes back with a refusal, telling the cap from a missing counter); with it, the
 * counter is created from the seed when missing.
 */
export function capClaim(table: Table, cap: CapName, owner: string, seed?: number): TransactItem {
  const { kind, limit } = CAPS[cap];
  const seeded = seed !== undefined;
  return {
    Update: {
      TableName: table.name,
      Key: keys.cap(kind, owner),
      UpdateExpression: seeded
        ? 'SET #used = if_not_exists(#used, :seed) + :one'
        : 'SET #used = #used + :one',
      ConditionExpression: seeded
        ? 'attribute_not_exists(#used) OR #used < :limit'
        : 'attribute_exists(#used) AND #used < :limit',
      ExpressionAttributeNames: { '#used': 'used' },
      ExpressionAttributeValues: { ...(seeded ? { ':seed': seed } : {}), ':one': 1, ':limit': limit },
      ...(seeded ? {} : { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const }),
    },
  };
}

/**
 * One fewer of `cap` for `owner`. Without `seed`: only on an existing counter (a refusal means it is
 * missing); with it, the counter is created from the seed (never below zero) when missing.
 */
export function capRelease(table: Table, cap: CapName, owner: string, seed?: number): TransactItem {
  const { kind } = CAPS[cap];
  const seeded = seed !== undefined;
  return {
    Update: {
      TableName: table.name,
      Key: keys.cap(kind, owner),
      UpdateExpression: seeded
        ? 'SET #used = if_not_exists(#used, :seed) - :one'
        : 'SET #used = #used - :one',
      ExpressionAttributeNames: { '#used': 'used' },
      ...(seeded
        ? { ExpressionAttributeValues: { ':seed': Math.max(seed, 1), ':one': 1 } }
        : { ConditionExpression: 'attribute_exists(#used)', ExpressionAttributeValues: { ':one': 1 } }),
    },
  };
}

/** A transaction refused at its last item (the counter's) alone. */
const refusedAtCounter = (error: unknown): error is ConditionFailed =>
  error instanceof ConditionFailed &&
  error.reasons.at(-1) === 'ConditionalCheckFailed' &&
  !error.reasons.slice(0, -1).includes('ConditionalCheckFailed');

/** Where a capped write sends its transaction, and how it counts a counter-less owner's live items. */
export interface CapWrite {
  cap: CapName;
  owner: string;
  liveCount: () => Promise<number>;
}

/**
 * `items` and a claim on the counter, in one transaction: at the cap it is refused with
 * `LimitReached` (`what`: the cap in words; `oauth`: RFC 7591's error shape); any other refusal is
 * passed on. One transaction when the counter exists.
 */
export async function transactClaiming(
  table: Table,
  { cap, owner, liveCount }: CapWrite,
  items: TransactItem[],
  what: string,
  options: { oauth?: boolean } = {},
): Promise<void> {
  const { limit } = CAPS[cap];
  const atCap = () => new LimitReached(what, limit, options.oauth);
  try {
    await transact(table, [...items, capClaim(table, cap, owner)]);
    return;
  } catch (error) {
    if (!refusedAtCounter(error)) throw error;
    if (error.items.at(-1) !== undefined) throw atCap();
  }
  // No counter: an owner from before the counters.
  const seed = await liveCount();
  if (seed >= limit) throw atCap();
  try {
    await transact(table, [...items, capClaim(table, cap, owner, seed)]);
  } catch (error) {
    if (refusedAtCounter(error)) throw atCap();
    throw error;
  }
}

/**
 * `items` and a release on the counter, in one transaction; a refusal of `items` is passed on as
 * it is. One transaction when the counter exists.
 */
export async function transactReleasing(
  table: Table,
  { cap, owner, liveCount }: CapWrite,
  items: TransactItem[],
): Promise<void> {
  try {
    await transact(table, [...items, capRelease(table, cap, owner)]);
    return;
  } catch (error) {
    if (!refusedAtCounter(error)) throw error;
  }
  // No counter: an owner from before the counters; the live count still holds the item deleted.
  await transact(table, [...items, capRelease(table, cap, owner, await liveCount())]);
}

/** IAM (shared/data/grants.ts): the counter moved in the create's or delete's transaction. */
export const access = {
  capCounter: [{ actions: ['dynamodb:UpdateItem'], leadingKeys: ['cap'] }],
} as const satisfies DataAccess;
