import { describe, expect, it } from 'vitest';
import { loadOpenApi } from '#scripts/openapi.ts';
import { WALLET_TYPES } from '#shared/data/records.ts';
import { BALANCE_LIMIT, encodeBalance, encodeTime } from '#shared/data/table.ts';
import { comparator, parseSorting, SORTING_VALUES, type SortingValue } from '#shared/data/wallet-order.ts';
import { WALLET_CURRENCY_COUNT, WALLETS_PER_CUSTOMER_MAX } from '#shared/data/wallets.ts';
import { compareWallets } from '#test/support/wallet-order.ts';

/** Deterministic pseudo-random numbers (mulberry32), so failures reproduce. */
function rng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const lexical = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

describe('balance sort-key encoding', () => {
  const edge = [
    -BALANCE_LIMIT,
    -BALANCE_LIMIT + 1,
    -1_000_000_000_000,
    -10,
    -1,
    0,
    1,
    9,
    10,
    99,
    100,
    2 ** 31,
    BALANCE_LIMIT,
  ];

  it('orders lexically exactly as numbers, negatives and large values included', () => {
    const random = rng(7);
    const values = [...edge, ...Array.from({ length: 2000 }, () => Math.round((random() - 0.5) * 2 * 1e15))];
    const byNumber = [...values].sort((a, b) => a - b);
    const byKey = [...values].sort((a, b) => lexical(encodeBalance(a), encodeBalance(b)));
    expect(byKey).toEqual(byNumber);
  });

  it('gives adjacent values distinct keys across the whole range', () => {
    for (const v of [...edge, 2 ** 52, 2 ** 53 - 3]) {
      if (v < BALANCE_LIMIT) expect(encodeBalance(v) < encodeBalance(v + 1)).toBe(true);
    }
  });

  it('has a fixed width', () => {
    const widths = new Set(edge.map((v) => encodeBalance(v).length));
    expect(widths.size).toBe(1);
  });

  it('refuses values it cannot order exactly', () => {
    expect(() => encodeBalance(BALANCE_LIMIT + 2)).toThrow(RangeError);
    expect(() => encodeBalance(1.5)).toThrow(RangeError);
  });
});

describe('time sort-key encoding', () => {
  it('orders chronologically', () => {
    const times = [
      '1970-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.001Z',
      '2100-12-31T23:59:59.999Z',
    ];
    expect([...times].sort((a, b) => lexical(encodeTime(a), encodeTime(b)))).toEqual(times);
  });
});

describe('wallet orders', () => {
  const requests: SortingValue[][] = [
    [],
    ...SORTING_VALUES.map((v) => [v]),
    ...SORTING_VALUES.flatMap((a) => SORTING_VALUES.map((b) => [a, b])),
  ];

  it('defaults to newest first and ignores repeated fields', () => {
    expect(parseSorting(undefined)).toEqual([{ field: 'created_at', descending: true }]);
    expect(parseSorting(['balance', '-balance', 'created_at'])).toEqual([
      { field: 'balance', descending: false },
      { field: 'created_at', descending: false },
    ]);
  });

  /** Against the contract's order written out independently (test/support/wallet-order.ts). */
  it.each(requests.map((r) => [r.join(',') || '(default)', r] as const))(
    'orders %s as the contract says, ties by id',
    (_, request) => {
      const random = rng(42);
      const base = Date.parse('2026-01-01T00:00:00.000Z');
      const wallets = Array.from({ length: WALLETS_PER_CUSTOMER_MAX }, (_, i) => ({
        id: `${Math.floor(random() * 1e8)
          .toString(16)
          .padStart(8, '0')}-${i}`,
        // Few distinct values on purpose: many ties on each field and on both.
        balance: Math.floor(random() * 7) - 3,
        created_at: new Date(base + Math.floor(random() * 5) * 1000).toISOString(),
      }));
      const ours = [...wallets].sort(comparator(parseSorting(request)));
      const contract = [...wallets].sort(compareWallets(request.length > 0 ? request : ['-created_at']));
      expect(ours.map((w) => w.id)).toEqual(contract.map((w) => w.id));
    },
  );
});

describe('wallets per customer', () => {
  it('are bounded by the slot: one per currency the API knows and wallet type', () => {
    const currencies = (loadOpenApi().components.schemas.Currency as { enum: string[] }).enum;
    expect(WALLET_CURRENCY_COUNT).toBe(currencies.length);
    expect(WALLETS_PER_CUSTOMER_MAX).toBe(currencies.length * WALLET_TYPES.length);
  });
});
