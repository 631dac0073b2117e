/**
 * The table as stacks deployed it before the local indexes were retired: `tableDefinition` plus
 * five local secondary indexes for wallet sorting, each keyed by a sort-key attribute every wallet
 * carried. An LSI cannot be removed from a table, so a stack deployed with them moves its data to a
 * new table (`npm run migrate:table`, docs/deploying.md, "Moving to a table without local indexes").
 *
 * Kept, frozen, for that move only: the stack declares this table beside the new one while the
 * data is copied (`-c legacyTable=serve`), and the migration rehearsals create and fill a table of
 * this shape the way the code of that time did (`legacyWalletSortKeys`). Nothing else reads it;
 * delete it once every stack has moved. Plain data, no SDK or CDK import, as `table.ts`.
 */
import { encodeBalance, encodeTime, type IndexDefinition, tableDefinition } from './table.ts';

/** The sort-key attribute of each retired local index. */
export const legacyWalletIndexes = {
  'LSI-wallet-created': 'WCA',
  'LSI-wallet-balance-created': 'WBC',
  'LSI-wallet-balance-created-desc': 'WBCD',
  'LSI-wallet-balance': 'WB',
  'LSI-wallet-balance-desc': 'WBD',
} as const;

export const legacyTableDefinition = {
  ...tableDefinition,
  indexes: [
    ...tableDefinition.indexes,
    ...Object.entries(legacyWalletIndexes).map(
      ([name, sortKey]): IndexDefinition => ({
        name,
        kind: 'local',
        partitionKey: tableDefinition.partitionKey,
        sortKey: { name: sortKey, type: 'S' },
      }),
    ),
  ] satisfies IndexDefinition[],
} as const;

/** What the shapes the migration moves between have in common; `table.ts`'s is the target. */
export type TableShape = typeof tableDefinition | typeof legacyTableDefinition;

const TIME_MAX = 10 ** 15 - 1;

/**
 * The five sort keys the code of that time wrote on every wallet (`W#` then order-preserving
 * values, each ending in the wallet id), so a rehearsal table holds wallets exactly as a deployed
 * one does.
 */
export function legacyWalletSortKeys(wallet: {
  id: string;
  created_at: string;
  balance: number;
}): Record<string, string> {
  const created = encodeTime(wallet.created_at);
  const createdDesc = String(TIME_MAX - Number(created)).padStart(15, '0');
  const balance = encodeBalance(wallet.balance);
  const balanceDesc = encodeBalance(-wallet.balance);
  const id = wallet.id;
  return {
    WCA: `W#${created}#${id}`,
    WBC: `W#${balance}#${created}#${id}`,
    WBCD: `W#${balance}#${createdDesc}#${id}`,
    WB: `W#${balance}#${id}`,
    WBD: `W#${balanceDesc}#${id}`,
  };
}
