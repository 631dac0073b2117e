/**
 * The scale model's arithmetic (test/scale/capacity.ts, test/scale/model.ts): item sizes by
 * DynamoDB's rules, units per action, the index writes a change causes under the table's own
 * definition, and the hot-partition ceiling. Figures worked by hand from the rules quoted in
 * capacity.ts.
 */
import { describe, expect, it } from 'vitest';
import { legacyWalletIndexes } from '#shared/data/legacy-table.ts';
import { attr, indexNames } from '#shared/data/table.ts';
import {
  indexWrites,
  itemReadUnits,
  itemSize,
  numberSize,
  queryReadUnits,
  writeUnits,
} from '#test/scale/capacity.ts';
import { hottestShared, requestCost } from '#test/scale/model.ts';
import type { RecordedCall } from '#test/scale/recorder.ts';

const S = (value: string) => ({ S: value });

describe('item size', () => {
  it('adds the UTF-8 lengths of names and values, numbers by significant digits, containers with overhead', () => {
    expect(itemSize({ PK: S('ab') })).toBe(4);
    // 'é' is two bytes in UTF-8.
    expect(itemSize({ név: S('é') })).toBe(4 + 2);
    expect(numberSize('123')).toBe(3); // 2 bytes for 3 digits + 1
    expect(numberSize('-0.0100')).toBe(2); // one significant digit
    expect(numberSize('12345678901234567890')).toBe(11); // trailing zero trimmed: 19 digits
    expect(itemSize({ n: { N: '123' }, b: { BOOL: true }, z: { NULL: true } })).toBe(4 + 2 + 2);
    expect(itemSize({ m: { M: { a: S('x') } } })).toBe(1 + 3 + (1 + 1 + 1));
    expect(itemSize({ l: { L: [S('xy'), { N: '1' }] } })).toBe(1 + 3 + (2 + 1) + (2 + 1));
    expect(itemSize({ s: { SS: ['a', 'bc'] } })).toBe(1 + 3);
    expect(itemSize(undefined)).toBe(0);
  });
});

describe('units', () => {
  it('writes per started KB, at least 1, twice in a transaction', () => {
    expect(writeUnits(0, false)).toBe(1);
    expect(writeUnits(1024, false)).toBe(1);
    expect(writeUnits(1025, false)).toBe(2);
    expect(writeUnits(1025, true)).toBe(4);
    expect(writeUnits(0, true)).toBe(2);
  });
  it('reads per started 4 KB per item, a Query page on the sum of its items, half when eventually consistent', () => {
    expect(itemReadUnits(0, false)).toBe(0.5);
    expect(itemReadUnits(4097, true)).toBe(2);
    expect(queryReadUnits([4096, 1], true)).toBe(2);
    expect(queryReadUnits([100, 100, 100], false)).toBe(0.5);
    expect(queryReadUnits([], true)).toBe(1);
  });
});

describe('index writes (the table definition the stack is built from)', () => {
  const base = { PK: S('CUSTOMER#1'), SK: S('CUSTOMER#1'), name: S('Ada') };
  const withGsi1 = { ...base, [attr.gsi1pk]: S('ORG#1'), [attr.gsi1sk]: S('CUSTOMER#2026#1') };

  it('puts an entry when the item enters a global index (ALL: the whole item), on the index partition', () => {
    const writes = indexWrites(undefined, withGsi1);
    expect(writes).toEqual([
      {
        index: indexNames.gsi1,
        kind: 'global',
        action: 'put',
        partitionKey: 'ORG#1',
        bytes: itemSize(withGsi1),
        units: 1,
      },
    ]);
    expect(indexWrites(base, base)).toEqual([]);
  });

  it('an attribute change updates an ALL entry; a key change deletes and puts; leaving deletes', () => {
    expect(indexWrites(withGsi1, { ...withGsi1, name: S('Grace') }).map((w) => w.action)).toEqual(['update']);
    expect(
      indexWrites(withGsi1, { ...withGsi1, [attr.gsi1sk]: S('CUSTOMER#2027#1') }).map((w) => w.action),
    ).toEqual(['delete', 'put']);
    expect(indexWrites(withGsi1, base).map((w) => w.action)).toEqual(['delete']);
  });

  it('a KEYS_ONLY entry holds the keys only and is not rewritten for another attribute', () => {
    const due = {
      ...base,
      [attr.gsi2pk]: S('DUE#0'),
      [attr.gsi2sk]: S('000123#1'),
      big: S('x'.repeat(5000)),
    };
    const [entry] = indexWrites(undefined, due);
    expect(entry).toMatchObject({ index: indexNames.due, action: 'put', partitionKey: 'DUE#0', units: 1 });
    expect(entry?.bytes).toBe(itemSize({ PK: due.PK, SK: due.SK, GSI2PK: due.GSI2PK, GSI2SK: due.GSI2SK }));
    expect(indexWrites(due, { ...due, big: S('y') })).toEqual([]);
  });

  it("a wallet enters no index, even one copied with the retired local indexes' sort keys", () => {
    const wallet = {
      PK: S('CUSTOMER#1'),
      SK: S('WALLET#1'),
      ...Object.fromEntries(Object.values(legacyWalletIndexes).map((name) => [name, S(`W#${name}`)])),
    };
    expect(indexWrites(undefined, wallet)).toEqual([]);
  });
});

describe('request cost and the hottest shared partition', () => {
  const transaction = (entry: string): RecordedCall => ({
    command: 'TransactWriteItems',
    kind: 'write',
    failed: false,
    localUnits: 6,
    accesses: [
      { action: 'put', partition: `SUB#${entry}`, bytes: 1500, units: 4, transactional: true },
      { action: 'put', partition: 'LIST#ORG', bytes: 1500, units: 4, transactional: true },
      { action: 'update', partition: 'LIST#ORG', bytes: 50, units: 2, transactional: true },
      { action: 'check', partition: 'PRODUCT#1', bytes: 900, units: 2, transactional: true },
    ],
    indexWrites: [
      { index: 'GSI1', kind: 'global', action: 'put', partitionKey: 'ORG', bytes: 1500, units: 2 },
    ],
  });

  it('counts items, true units beside Local’s, and units per partition', () => {
    const cost = requestCost([transaction('a')]);
    expect(cost).toMatchObject({
      roundTrips: 1,
      itemsWritten: 3,
      itemsChecked: 1,
      indexWrites: 1,
      trueWru: 14,
      localWru: 6,
    });
    expect(Object.fromEntries(cost.writePartitions)).toEqual({
      'SUB#a': 4,
      'LIST#ORG': 6,
      'PRODUCT#1': 2,
      'GSI1:ORG': 2,
    });
    expect(cost.largestTransaction).toEqual({ actions: 4, bytes: 3950 });
  });

  it('takes the hottest partition every repetition touched; a new object’s own partition sets no ceiling', () => {
    const perRequest = ['a', 'b'].map((id) => requestCost([transaction(id)]).writePartitions);
    expect(hottestShared(perRequest, 1000)).toEqual({ partition: 'LIST#ORG', units: 6, ceiling: 1000 / 6 });
    const ownOnly = ['a', 'b'].map((id) => new Map([[`SUB#${id}`, 10]]));
    expect(hottestShared(ownOnly, 1000)).toBeUndefined();
  });

  it('takes a family of hash-chosen shards as one partition of their count: the units a request puts on all of them', () => {
    // One event per request, each on another shard: every request writes the family, never one shard twice.
    const single = [3, 11].map((shard) => new Map([[`GSI1:UEVLIST#org#S${shard}`, 1]]));
    expect(hottestShared(single, 1000)).toEqual({
      partition: 'GSI1:UEVLIST#org#S<shard> (16 shards)',
      units: 1,
      ceiling: 16_000,
      shards: 16,
    });
    // A batch spread over the shards: 100 units in all, whichever shard got the most.
    const batch = [0, 1].map(
      (r) =>
        new Map(
          Array.from(
            { length: 16 },
            (_, shard) => [`GSI1:UEVLIST#org#S${shard}`, shard === r ? 10 : 6] as const,
          ),
        ),
    );
    expect(hottestShared(batch, 1000)).toMatchObject({ units: 100, ceiling: 160 });
    // A shared unsharded partition with more units per shard-equivalent is still the hottest.
    const both = [0, 1].map(
      (r) =>
        new Map([
          [`GSI1:UEVLIST#org#S${r}`, 20],
          ['LIST#ORG', 6],
        ]),
    );
    expect(hottestShared(both, 1000)).toMatchObject({ partition: 'LIST#ORG', units: 6 });
  });

  it('a list view after its shard (`LIST#PRODUCT#<org>#S<k>#is_archived=false`) is a family of its own', () => {
    const views = [2, 9].map(
      (shard) =>
        new Map([
          [`LIST#PRODUCT#org#S${shard}`, 10],
          [`LIST#PRODUCT#org#S${shard}#is_archived=false#is_recurring=true`, 10],
        ]),
    );
    expect(hottestShared(views, 1000)).toEqual({
      partition: 'LIST#PRODUCT#org#S<shard> (16 shards)',
      units: 10,
      ceiling: 1_600,
      shards: 16,
    });
    const viewOnly = views.map(
      (m) => new Map([...m].filter(([partition]) => partition.includes('is_archived'))),
    );
    expect(hottestShared(viewOnly, 1000)).toMatchObject({
      partition: 'LIST#PRODUCT#org#S<shard>#is_archived=false#is_recurring=true (16 shards)',
      shards: 16,
    });
    // The old, unsharded list and its views stay single partitions.
    const old = [0, 1].map(() => new Map([['LIST#PRODUCT#org#is_archived=false', 10]]));
    expect(hottestShared(old, 1000)).toEqual({
      partition: 'LIST#PRODUCT#org#is_archived=false',
      units: 10,
      ceiling: 100,
    });
  });
});
