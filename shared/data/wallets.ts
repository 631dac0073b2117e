import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { keyId, readMany } from './catalog.ts';
import { createOnly, run, type Table, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { type CustomerRecord, customerRecord, item, record, type WalletRecord } from './records.ts';
import { indexNames, keys, walletSortKeys } from './table.ts';
import { comparator, planFor, type SortCriterion, sameGroup } from './wallet-order.ts';

/** Items read per follow-up query while completing a tie group at the page boundary. */
const CONTINUATION = 25;

/**
 * Reads the wallets at positions [offset, offset + limit) of the requested order.
 * Cost is proportional to offset + limit (DynamoDB has no offset), never to the
 * customer's total number of wallets.
 */
export async function listWalletPage(
  table: Table,
  customerId: string,
  criteria: readonly SortCriterion[],
  offset: number,
  limit: number,
): Promise<WalletRecord[]> {
  const plan = planFor(criteria);
  const needed = offset + limit;
  const read: WalletRecord[] = [];
  let startKey: Record<string, unknown> | undefined;
  for (;;) {
    const missing = needed - read.length;
    // One item beyond the page shows whether the boundary tie group is complete.
    const slack = plan.groupFields.length > 0 ? 1 : 0;
    const pageSize = missing > 0 ? missing + slack : CONTINUATION;
    const exclusiveStartKey = startKey;
    const result = await run(() =>
      table.doc.send(
        new QueryCommand({
          TableName: table.name,
          IndexName: plan.index,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': keys.customer(customerId).PK },
          ScanIndexForward: plan.forward,
          Limit: pageSize,
          ...(exclusiveStartKey ? { ExclusiveStartKey: exclusiveStartKey } : {}),
        }),
      ),
    );
    for (const stored of result.Items ?? []) read.push(record<WalletRecord>(stored));
    startKey = result.LastEvaluatedKey;
    if (!startKey || boundaryComplete(read, needed, plan)) break;
  }
  if (plan.groupFields.length > 0) read.sort(comparator(criteria));
  return read.slice(offset, needed);
}

function boundaryComplete(read: WalletRecord[], needed: number, plan: ReturnType<typeof planFor>): boolean {
  if (read.length < needed) return false;
  if (plan.groupFields.length === 0) return true;
  const boundary = read[needed - 1];
  const last = read[read.length - 1];
  return (
    read.length > needed && boundary !== undefined && last !== undefined && !sameGroup(plan, boundary, last)
  );
}

/**
 * Creates a wallet, its (customer, currency, type) uniqueness slot and the
 * customer's wallet count in one transaction.
 */
export async function insertWallet(table: Table, wallet: WalletRecord): Promise<void> {
  await transact(table, [
    {
      Put: createOnly(
        table,
        item({ ...keys.wallet(wallet.customer_id, wallet.id), ...walletSortKeys(wallet) }, 'wallet', wallet),
      ),
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

/**
 * IAM (shared/data/grants.ts). Built by a pure call: it reads `indexNames`, and a property read
 * would otherwise keep the declarations in every bundle that imports this module.
 */
export const access = /* @__PURE__ */ (() =>
  ({
    listWalletPage: [
      {
        actions: ['dynamodb:Query'],
        leadingKeys: ['customer'],
        indexes: [
          indexNames.walletByCreated,
          indexNames.walletByBalanceCreated,
          indexNames.walletByBalanceCreatedDesc,
          indexNames.walletByBalance,
          indexNames.walletByBalanceDesc,
        ],
      },
    ],
    /** One batch reads the session's customer (still live?) and the wallet, both in its partition. */
    getCustomerWallet: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer'] }],
  }) as const satisfies DataAccess)();
