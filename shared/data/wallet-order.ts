/**
 * The orders List Wallets serves: `sorting` criteria applied in the order given, then ascending
 * wallet id. A customer holds at most `WALLETS_PER_CUSTOMER_MAX` wallets (one per currency and
 * wallet type, kept by the wallet slot), so the reader reads them all from the customer's partition
 * and orders them here: no index, and every order the contract allows is exact.
 */
export type SortField = 'created_at' | 'balance';

export interface SortCriterion {
  field: SortField;
  descending: boolean;
}

export const SORTING_VALUES = ['created_at', '-created_at', 'balance', '-balance'] as const;
export type SortingValue = (typeof SORTING_VALUES)[number];

export const DEFAULT_SORTING: readonly SortingValue[] = ['-created_at'];

/** Applies criteria in the order given; a later criterion on a field already used changes nothing. */
export function parseSorting(values: readonly SortingValue[] | null | undefined): SortCriterion[] {
  const criteria: SortCriterion[] = [];
  for (const value of values && values.length > 0 ? values : DEFAULT_SORTING) {
    const descending = value.startsWith('-');
    const field = (descending ? value.slice(1) : value) as SortField;
    if (!criteria.some((c) => c.field === field)) criteria.push({ field, descending });
  }
  return criteria;
}

export interface SortableWallet {
  id: string;
  created_at: string;
  balance: number;
}

const fieldValue = (wallet: SortableWallet, field: SortField): number =>
  field === 'balance' ? wallet.balance : Date.parse(wallet.created_at);

/** The requested order in full: the criteria, then ascending id. */
export function comparator(criteria: readonly SortCriterion[]) {
  return (a: SortableWallet, b: SortableWallet): number => {
    for (const { field, descending } of criteria) {
      const diff = fieldValue(a, field) - fieldValue(b, field);
      if (diff !== 0) return descending ? -diff : diff;
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  };
}
