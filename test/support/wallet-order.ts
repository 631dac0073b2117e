/**
 * The order List Wallets promises (docs/conventions.md, Lists), written out again here,
 * independently of shared/data/wallet-order.ts, so client tests judge the API
 * against the contract rather than against its own implementation.
 */
import { expect } from 'vitest';

export type WalletSorting = 'created_at' | '-created_at' | 'balance' | '-balance';

/** A wallet as the API sends it (`created_at` string) or as the 0.49 client parses it (`createdAt` Date). */
export type WalletLike = { id: string; balance: number } & ({ created_at: string } | { createdAt: Date });

/** Every single criterion, and two-criteria combinations in both fields and directions. */
export const SORTINGS: WalletSorting[][] = [
  ['created_at'],
  ['-created_at'],
  ['balance'],
  ['-balance'],
  ['balance', 'created_at'],
  ['balance', '-created_at'],
  ['-balance', 'created_at'],
  ['-balance', '-created_at'],
  ['created_at', 'balance'],
  ['-created_at', '-balance'],
];

/** For `it.for`: `$label` names the case in the test title. */
export const SORTING_CASES = SORTINGS.map((sorting) => ({ label: sorting.join(','), sorting }));

const millis = (wallet: WalletLike): number =>
  'createdAt' in wallet ? wallet.createdAt.getTime() : Date.parse(wallet.created_at);

/** The criteria in the order given, then ascending id. */
export function compareWallets(sorting: readonly WalletSorting[]) {
  return (a: WalletLike, b: WalletLike): number => {
    for (const criterion of sorting) {
      const descending = criterion.startsWith('-');
      const diff = criterion.endsWith('balance') ? a.balance - b.balance : millis(a) - millis(b);
      if (diff !== 0) return descending ? -diff : diff;
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  };
}

/** The list is in the promised order, and (for a useful test) the order is strict: no two ids equal. */
export function expectSorted(wallets: readonly WalletLike[], sorting: readonly WalletSorting[]): void {
  const expected = [...wallets].sort(compareWallets(sorting)).map((w) => w.id);
  expect(
    wallets.map((w) => w.id),
    `order for sorting=${sorting.join(',')}`,
  ).toEqual(expected);
  expect(new Set(expected).size).toBe(expected.length);
}

/** The demo data has ties on balance, so the id tie-break is really exercised. */
export function expectBalanceTies(wallets: readonly WalletLike[]): void {
  const balances = wallets.map((w) => w.balance);
  expect(new Set(balances).size).toBeLessThan(balances.length);
}
