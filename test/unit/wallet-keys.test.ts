import { describe, expect, it } from 'vitest';
import {
  BALANCE_LIMIT,
  encodeBalance,
  encodeBalanceDesc,
  encodeTime,
  encodeTimeDesc,
  walletSortKeys,
} from '#shared/data/table.ts';
import { comparator, parseSorting, planFor } from '#shared/data/wallet-order.ts';

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
    const byKeyDesc = [...values].sort((a, b) => lexical(encodeBalanceDesc(a), encodeBalanceDesc(b)));
    expect(byKeyDesc).toEqual([...byNumber].reverse());
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
  it('orders chronologically and reverse-chronologically', () => {
    const times = [
      '1970-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.001Z',
      '2100-12-31T23:59:59.999Z',
    ];
    expect([...times].sort((a, b) => lexical(encodeTime(a), encodeTime(b)))).toEqual(times);
    expect([...times].sort((a, b) => lexical(encodeTimeDesc(a), encodeTimeDesc(b)))).toEqual(
      [...times].reverse(),
    );
  });
});

describe('sorting plans', () => {
  const values = ['created_at', '-created_at', 'balance', '-balance'] as const;
  const requests = [[], ...values.map((v) => [v]), ...values.flatMap((a) => values.map((b) => [a, b]))];

  it('defaults to newest first and ignores repeated fields', () => {
    expect(parseSorting(undefined)).toEqual([{ field: 'created_at', descending: true }]);
    expect(parseSorting(['balance', '-balance', 'created_at'])).toEqual([
      { field: 'balance', descending: false },
      { field: 'created_at', descending: false },
    ]);
  });

  /**
   * For every request: the index order (sort key, direction), once ties within
   * the plan's group fields are re-ordered, must equal the requested order.
   */
  it.each(requests.map((r) => [r.join(',') || '(default)', r] as const))(
    'serves %s from an index',
    (_, request) => {
      const random = rng(42);
      const base = Date.parse('2026-01-01T00:00:00.000Z');
      const wallets = Array.from({ length: 300 }, (_, i) => ({
        id: `${Math.floor(random() * 1e8)
          .toString(16)
          .padStart(8, '0')}-${i}`,
        // Few distinct values on purpose: many ties on each field and on both.
        balance: Math.floor(random() * 7) - 3,
        created_at: new Date(base + Math.floor(random() * 5) * 1000).toISOString(),
      }));
      const criteria = parseSorting([...request]);
      const plan = planFor(criteria);
      const attribute = {
        'LSI-wallet-created': 'WCA',
        'LSI-wallet-balance-created': 'WBC',
        'LSI-wallet-balance-created-desc': 'WBCD',
        'LSI-wallet-balance': 'WB',
        'LSI-wallet-balance-desc': 'WBD',
      }[plan.index];
      const indexOrder = [...wallets].sort((a, b) => {
        const order = lexical(walletSortKeys(a)[attribute] as string, walletSortKeys(b)[attribute] as string);
        return plan.forward ? order : -order;
      });
      const expected = [...wallets].sort(comparator(criteria));
      if (plan.groupFields.length === 0) {
        expect(indexOrder.map((w) => w.id)).toEqual(expected.map((w) => w.id));
      } else {
        // Stable sort of the index order by the full comparator must only move items within groups.
        const groupOf = (w: (typeof wallets)[number]) => plan.groupFields.map((f) => w[f]).join('|');
        expect(indexOrder.map(groupOf)).toEqual(expected.map(groupOf));
      }
    },
  );
});
