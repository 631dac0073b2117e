/**
 * How a `sorting` request is served from the wallet indexes.
 *
 * Each wallet has five sort keys (see `walletSortKeys`), all ending in the id.
 * For every request the plan names the index and direction whose order already
 * agrees with the requested one on the leading criteria ("group fields"); only
 * ties inside one group (same timestamp, or same balance and timestamp) are put
 * in final order in memory, and the reader always completes the group at the page
 * boundary, so pages neither overlap nor skip.
 */
import { indexNames, type WalletIndexName } from './table.ts';

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

export interface ReadPlan {
  index: WalletIndexName;
  forward: boolean;
  /** Fields on which the index order equals the requested order; ties beyond them are ordered in memory. */
  groupFields: SortField[];
}

export function planFor(criteria: readonly SortCriterion[]): ReadPlan {
  const [primary, secondary] = criteria;
  if (!primary) throw new Error('at least one sort criterion is required');
  if (primary.field === 'created_at') {
    const exact = !primary.descending && !secondary;
    return {
      index: indexNames.walletByCreated,
      forward: !primary.descending,
      groupFields: exact ? [] : ['created_at'],
    };
  }
  if (!secondary) {
    return {
      index: primary.descending ? indexNames.walletByBalanceDesc : indexNames.walletByBalance,
      forward: true,
      groupFields: [],
    };
  }
  // Balance then created_at, both directions: one index read forwards is exact; read backwards
  // it only reverses the id tie-break, which matters for equal balance and equal timestamp alone.
  if (!primary.descending) {
    return {
      index: secondary.descending ? indexNames.walletByBalanceCreatedDesc : indexNames.walletByBalanceCreated,
      forward: true,
      groupFields: [],
    };
  }
  return {
    index: secondary.descending ? indexNames.walletByBalanceCreated : indexNames.walletByBalanceCreatedDesc,
    forward: false,
    groupFields: ['balance', 'created_at'],
  };
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

export function sameGroup(plan: ReadPlan, a: SortableWallet, b: SortableWallet): boolean {
  return plan.groupFields.every((field) => fieldValue(a, field) === fieldValue(b, field));
}
