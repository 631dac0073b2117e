import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { keyId, readMany } from './catalog.ts';
import { createOnly, run, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import {
  type CustomerRecord,
  customerRecord,
  item,
  record,
  WALLET_TYPES,
  type WalletRecord,
} from './records.ts';
import { keys } from './table.ts';
import { comparator, type SortCriterion } from './wallet-order.ts';

/**
 * Currencies a wallet can hold: the OpenAPI document's `Currency` enum (its length; a unit test
 * holds the two together, so the bound cannot drift from what the admin command accepts).
 */
export const WALLET_CURRENCY_COUNT = 160;

/**
 * Most wallets one customer can have: one per currency and wallet type, kept by the wallet slot
 * (`keys.walletSlot`, created in the wallet's own transaction). 160 × 2 = 320.
 */
export const WALLETS_PER_CUSTOMER_MAX = WALLET_CURRENCY_COUNT * WALLET_TYPES.length;

/**
 * Reads the wallets at positions [offset, offset + limit) of the requested order.
 *
 * One strongly consistent base-table `Query` of the customer's `WALLET#` items (no index: a local
 * index would cap the partition's item collection at 10 GB), ordered in memory. The slot bounds a
 * customer at `WALLETS_PER_CUSTOMER_MAX` wallets, about 120 KB (≈ 700 bytes each for wallets
 * copied from the table that still carry the five retired sort keys: 224 KB, 55 RRU): one round
 * trip, far under a `Query` page's 1 MB, whatever the page and the sorting.
 */
export async function listWalletPage(
  table: Table,
  customerId: string,
  criteria: readonly SortCriterion[],
  offset: number,
  limit: number,
): Promise<WalletRecord[]> {
  const wallets = await readCustomerWallets(table, customerId);
  return wallets.sort(comparator(criteria)).slice(offset, offset + limit);
}

async function readCustomerWallets(table: Table, customerId: string): Promise<WalletRecord[]> {
  const first = keys.wallet(customerId, '');
  const read: WalletRecord[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const exclusiveStartKey = startKey;
    const result = await run(() =>
      table.doc.send(
        new QueryCommand({
          TableName: table.name,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :wallet)',
          ExpressionAttributeValues: { ':pk': first.PK, ':wallet': first.SK },
          ConsistentRead: true,
          // One more than can exist: a read never runs past the bound, even on a broken invariant.
          Limit: WALLETS_PER_CUSTOMER_MAX + 1 - read.length,
          ...(exclusiveStartKey ? { ExclusiveStartKey: exclusiveStartKey } : {}),
        }),
      ),
    );
    for (const stored of result.Items ?? []) read.push(record<WalletRecord>(stored));
    startKey = result.LastEvaluatedKey;
  } while (startKey && read.length <= WALLETS_PER_CUSTOMER_MAX);
  if (read.length > WALLETS_PER_CUSTOMER_MAX) {
    throw new Error(`customer ${customerId} has more than ${WALLETS_PER_CUSTOMER_MAX} wallets`);
  }
  return read;
}

/**
 * Creates a wallet, its (customer, currency, type) uniqueness slot and the
 * customer's wallet count in one transaction.
 */
export async function insertWallet(table: Table, wallet: WalletRecord): Promise<void> {
  await transact(table, [
    {
      Put: createOnly(table, item(keys.wallet(wallet.customer_id, wallet.id), 'wallet', wallet)),
    },
    {
      Put: createOnly(table, {
        ...keys.walletSlot(wallet.customer_id, wallet.currency, wallet.wallet_type),
        entity: 'wallet_slot',
        wallet_id: wallet.id,
      }),
    },
    {
      Update: {
        TableName: table.name,
        Key: keys.customer(wallet.customer_id),
        UpdateExpression: 'ADD wallet_count :one',
        ConditionExpression:
          'attribute_exists(PK) AND deleted_at = :null AND organization_id = :organization',
        ExpressionAttributeValues: { ':one': 1, ':null': null, ':organization': wallet.organization_id },
      },
    },
  ]);
}

/**
 * The session customer and one of its wallets, in one batch (both live in the customer's
 * partition, so a wallet of another customer cannot even be addressed).
 */
export async function getCustomerWallet(
  table: Table,
  customerId: string,
  walletId: string,
): Promise<{ customer?: CustomerRecord; wallet?: WalletRecord }> {
  const found = await readMany(table, [keys.customer(customerId), keys.wallet(customerId, walletId)]);
  const customer = found.get(keyId(keys.customer(customerId)));
  const wallet = found.get(keyId(keys.wallet(customerId, walletId)));
  return {
    ...(customer ? { customer: customerRecord(customer) } : {}),
    ...(wallet ? { wallet: record<WalletRecord>(wallet) } : {}),
  };
}

/** IAM (shared/data/grants.ts). */
export const access = {
  /** The customer's partition only: its `WALLET#` items, on the base table. */
  listWalletPage: [{ actions: ['dynamodb:Query'], leadingKeys: ['customer'] }],
  /** One batch reads the session's customer (still live?) and the wallet, both in its partition. */
  getCustomerWallet: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer'] }],
} as const satisfies DataAccess;
