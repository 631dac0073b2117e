/**
 * `shared/data/listing.ts` against DynamoDB Local, judged by an independent model: every page of
 * every order equals the slice of the whole collection sorted in memory by a comparator written
 * here from the definition of the order (code points of the lowercased text, nulls last, ascending
 * id for ties), not by the module's own encoding.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transact } from '#shared/data/dynamo.ts';
import {
  countShard,
  delistedWrites,
  type Listing,
  listedWrites,
  listMatchingPage,
  listPage,
  parseListSorting,
  relistedWrites,
  type SortCriterion,
  TooManyMatches,
} from '#shared/data/listing.ts';
import { LIST_COUNT_SHARDS } from '#shared/data/table.ts';
import { type FreshTable, freshTable } from '../support/dynamodb.ts';

function partition<T>(items: T[], test: (item: T) => boolean): [T[], T[]] {
  return [items.filter(test), items.filter((item) => !test(item))];
}

interface Thing {
  id: string;
  organization_id: string;
  created_at: string;
  name: string | null;
  amount: number | null;
  kind: string;
}

type Field = 'created_at' | 'name' | 'amount' | 'kind';

const things: Listing<Thing, Field> = {
  partition: 'customerList',
  entity: 'thing_entry',
  owner: (thing) => thing.organization_id,
  fields: {
    created_at: (thing) => ({ time: thing.created_at }),
    name: (thing) => ({ text: thing.name }),
    amount: (thing) => ({ integer: thing.amount }),
    kind: (thing) => ({ choice: thing.kind }),
  },
};

/** The same things, split into segments by kind and amount (few values each): `shared/data/listing.ts`. */
const segmented: Listing<Thing, Field> = {
  ...things,
  partition: 'productList',
  segments: ['kind', 'amount'],
};

let db: FreshTable;
const table = () => ({ doc: db.client, name: db.tableName });
beforeAll(async () => {
  db = await freshTable('listing');
});
afterAll(() => db?.drop());

// --- The model ------------------------------------------------------------

const codePoints = (text: string) => [...text].map((char) => char.codePointAt(0) ?? 0);

function compareText(a: string, b: string): number {
  const x = codePoints(a.toLowerCase());
  const y = codePoints(b.toLowerCase());
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const diff = (x[i] ?? 0) - (y[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return x.length - y.length;
}

function compareField(a: Thing, b: Thing, field: Field): number {
  const x = a[field];
  const y = b[field];
  if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
  if (field === 'created_at') return Date.parse(String(x)) - Date.parse(String(y));
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return compareText(String(x), String(y));
}

function modelOrder(criteria: readonly SortCriterion<Field>[]) {
  return (a: Thing, b: Thing) => {
    for (const { field, descending } of criteria) {
      const diff = compareField(a, b, field);
      if (diff !== 0) return descending ? -diff : diff;
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  };
}

// --- Generators -------------------------------------------------------------

const hex = (n: number) =>
  fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });
const uuid = fc
  .tuple(hex(8), hex(4), hex(3), hex(3), hex(12))
  .map(([a, b, c, d, e]) => `${a}-${b}-4${c}-a${d}-${e}`);
/** Names built to collide: few letters, case variants, prefixes, code points that order differently as UTF-16. */
const longPrefix = 'x'.repeat(170);
const name = fc.option(
  fc.oneof(
    fc.string({
      unit: fc.constantFrom('a', 'A', 'b', 'B', ' ', 'é', '\uE000', '😀', '\u0001', '\u0000', '\u0002', '#'),
      maxLength: 4,
    }),
    fc.string({ unit: fc.constantFrom('a', 'b'), maxLength: 3 }).map((tail) => longPrefix + tail),
  ),
  { nil: null, freq: 5 },
);
const moment = fc
  .integer({ min: 0, max: 6 })
  .map((n) => new Date(Date.UTC(2026, 10, 1) + n * 1_000).toISOString());
const amount = fc.option(
  fc.integer({ min: -3, max: 3 }).map((n) => n * 2 ** 50),
  { nil: null, freq: 5 },
);
const thing = (organization: string) =>
  fc.record({
    id: uuid,
    organization_id: fc.constant(organization),
    created_at: moment,
    name,
    amount,
    kind: fc.constantFrom('active', 'canceled', 'trialing'),
  });
const criterion = fc.record({
  field: fc.constantFrom<Field>('created_at', 'name', 'amount', 'kind'),
  descending: fc.boolean(),
});

/** Each entity's writes as the create that makes it: concurrently, as creates of one organization come. */
async function insertAll(list: Thing[], listing = things) {
  await Promise.all(list.map((entity) => transact(table(), listedWrites(table(), listing, entity))));
}

describe('listing: sorted pages from list entries', () => {
  it('every page of every order is the slice of the model order, across organizations', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.oneof(thing('o1'), thing('o2')), { selector: (t) => t.id, maxLength: 30 }),
        fc.array(criterion, { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 1, max: 7 }),
        async (generated, rawCriteria, limit) => {
          // Each run lists its own organizations, so runs never see each other's entries.
          run++;
          const list = generated.map((t) => ({ ...t, organization_id: `${t.organization_id}-${run}` }));
          await insertAll(list);
          const owners = [`o1-${run}`, `o2-${run}`];
          const criteria = parseListSorting<Field>(
            rawCriteria.map((c) => `${c.descending ? '-' : ''}${c.field}`),
            ['-created_at'],
          );
          const expected = [...list].sort(modelOrder(criteria)).map((t) => t.id);
          const seen: string[] = [];
          for (let page = 0; page * limit < list.length + limit; page++) {
            const result = await listPage(table(), things, owners, criteria, page * limit, limit);
            expect(result.total).toBe(list.length);
            seen.push(...result.items.map((t) => t.id));
          }
          expect(seen).toEqual(expected);
        },
      ),
      { numRuns: Number(process.env.LISTING_RUNS ?? 60) },
    );
  });

  it('completes a tie group at the page boundary before ordering it (descending, ties by ascending id)', async () => {
    const owner = 'ties';
    const list = [1, 2, 3, 4, 5].map((i) => ({
      id: `00000000-0000-4000-a000-00000000000${i}`,
      organization_id: owner,
      created_at: '2026-11-01T00:00:00.000Z',
      name: null,
      amount: null,
      kind: 'active',
    }));
    await insertAll(list);
    const ids: string[] = [];
    for (let offset = 0; offset < 5; offset++) {
      const page = await listPage(
        table(),
        things,
        [owner],
        parseListSorting<Field>(['-kind'], []),
        offset,
        1,
      );
      ids.push(...page.items.map((t) => t.id.slice(-1)));
    }
    expect(ids).toEqual(['1', '2', '3', '4', '5']);
  });

  it('ascending by a text longer than the key holds: the tie on the key is completed and ordered in full', async () => {
    // Found by the property above (rarely drawn): the page took the first entry in key order, which
    // among names equal for the key's 160 code points is id order, not name order.
    const owner = 'long-names';
    const list = [
      ['00000000-0000-4000-a000-000000000001', `${longPrefix}b`],
      ['00000000-0000-4000-a000-000000000002', `${longPrefix}a`],
    ].map(([id, name]) => ({
      id: id as string,
      organization_id: owner,
      created_at: '2026-11-01T00:00:00.000Z',
      name: name as string,
      amount: null,
      kind: 'active',
    }));
    await insertAll(list);
    const pages: (string | null)[] = [];
    for (const offset of [0, 1]) {
      const page = await listPage(table(), things, [owner], parseListSorting<Field>(['name'], []), offset, 1);
      pages.push(...page.items.map((t) => t.name?.slice(-1) ?? null));
    }
    expect(pages).toEqual(['a', 'b']);
  });

  it('returns the record as written, without keys or entity tags', async () => {
    const entity: Thing = {
      id: '00000000-0000-4000-a000-000000000001',
      organization_id: 'shape',
      created_at: '2026-11-01T00:00:00.000Z',
      name: 'Ada',
      amount: 5,
      kind: 'active',
    };
    await insertAll([entity]);
    const page = await listPage(table(), things, ['shape'], parseListSorting<Field>(null, ['name']), 0, 10);
    expect(page).toEqual({ items: [entity], total: 1 });
  });

  it('keeps entries and the count in step through updates and removals', async () => {
    const owner = 'lifecycle';
    const base = (i: number): Thing => ({
      id: `00000000-0000-4000-a000-00000000000${i}`,
      organization_id: owner,
      created_at: `2026-11-0${i}T00:00:00.000Z`,
      name: `n${i}`,
      amount: i,
      kind: 'active',
    });
    const [a, b, c] = [base(1), base(2), base(3)];
    await insertAll([a, b, c]);
    const renamed = { ...a, name: 'zz', amount: 100 };
    await transact(table(), relistedWrites(table(), things, a, renamed));
    await transact(table(), delistedWrites(table(), things, b));
    const byName = await listPage(table(), things, [owner], parseListSorting<Field>(['name'], []), 0, 10);
    expect(byName.items.map((t) => t.name)).toEqual(['n3', 'zz']);
    expect(byName.total).toBe(2);
    const byAmount = await listPage(
      table(),
      things,
      [owner],
      parseListSorting<Field>(['-amount'], []),
      0,
      10,
    );
    expect(byAmount.items).toEqual([renamed, c]);
    // Exactly one entry per field per live entity, and count shards summing to the live entities:
    // nothing stale is left behind.
    const stored = await db.client.send(
      new QueryCommand({
        TableName: db.tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': `LIST#CUSTOMER#${owner}` },
      }),
    );
    const [shards, entries] = partition(stored.Items ?? [], (i) => String(i.SK).startsWith('#COUNT#'));
    expect(entries).toHaveLength(2 * 4);
    expect(shards.reduce((sum, shard) => sum + Number(shard.entry_count), 0)).toBe(2);
  });

  it('spreads the count over shards, so concurrent creates in one organization do not all touch one item', async () => {
    const ids = Array.from(
      { length: 64 },
      (_, i) => `00000000-0000-4000-a000-${String(i).padStart(12, '0')}`,
    );
    const used = new Set(ids.map(countShard));
    expect(used.size).toBe(LIST_COUNT_SHARDS);
    // An entity always adds to and takes from the same shard.
    for (const id of ids) expect(countShard(id)).toBe(countShard(id));
  });

  it('a page past the end reads nothing but the counts', async () => {
    const page = await listPage(
      table(),
      things,
      ['lifecycle', 'nobody'],
      parseListSorting<Field>(null, ['name']),
      50,
      10,
    );
    expect(page).toEqual({ items: [], total: 2 });
  });

  it('reads a page of a large list in proportion to the page, not the list', async () => {
    const owner = 'large';
    const list = Array.from({ length: 300 }, (_, i) => ({
      id: `00000000-0000-4000-a000-${String(i).padStart(12, '0')}`,
      organization_id: owner,
      created_at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
      name: i % 2 === 0 ? 'same' : `name-${i}`,
      amount: i,
      kind: 'active',
    }));
    for (let i = 0; i < list.length; i += 25) {
      await Promise.all(
        list.slice(i, i + 25).map((t) => transact(table(), listedWrites(table(), things, t))),
      );
    }
    const consumed: number[] = [];
    const counting = {
      name: db.tableName,
      doc: {
        send: async (command: { input: Record<string, unknown> }) => {
          const result = await db.client.send(
            Object.assign(command, { input: { ...command.input, ReturnConsumedCapacity: 'TOTAL' } }) as never,
          );
          consumed.push(
            Number(
              (result as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity?.CapacityUnits ??
                0,
            ),
          );
          return result;
        },
      },
    } as never;
    const page = await listPage(
      counting,
      things,
      [owner],
      parseListSorting<Field>(['-created_at'], []),
      0,
      10,
    );
    expect(page.items.map((t) => t.amount)).toEqual([299, 298, 297, 296, 295, 294, 293, 292, 291, 290]);
    expect(page.total).toBe(300);
    // One count read and one query of 11 entries (the 11th shows the tie group is complete).
    expect(consumed.length).toBe(2);
    expect(consumed.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(3);
  });
});

describe('listing: views and prefixes', () => {
  /** The same things, also listed in a view per kind and per archived flag. */
  type Viewed = Thing & { archived: boolean };
  const viewed: Listing<Viewed, Field, 'kind' | 'archived'> = {
    ...(things as unknown as Listing<Viewed, Field>),
    partition: 'productList',
    views: { kind: (thing) => thing.kind, archived: (thing) => String(thing.archived) },
  };
  const viewedThing = (organization: string) =>
    fc.tuple(thing(organization), fc.boolean()).map(([t, archived]) => ({ ...t, archived }));

  it('a filtered page is the slice of the model order among the things matching, through changes of view', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(viewedThing('v'), { selector: (t) => t.id, minLength: 1, maxLength: 20 }),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom('active', 'canceled', 'trialing'), fc.boolean()), {
          maxLength: 8,
        }),
        fc.array(criterion, { minLength: 1, maxLength: 2 }),
        fc.record(
          {
            kind: fc.constantFrom('active', 'canceled', 'trialing'),
            archived: fc.constantFrom('true', 'false'),
          },
          { requiredKeys: [] },
        ),
        async (generated, changes, rawCriteria, filter) => {
          run++;
          const owner = `v-${run}`;
          const list = generated.map((t) => ({ ...t, organization_id: owner }));
          await Promise.all(list.map((entity) => transact(table(), listedWrites(table(), viewed, entity))));
          // Changes that move things between views, applied as an update would.
          for (const [pick, kind, archived] of changes) {
            const index = pick % list.length;
            const before = list[index] as Viewed;
            const after = { ...before, kind, archived };
            await transact(table(), relistedWrites(table(), viewed, before, after));
            list[index] = after;
          }
          const criteria = parseListSorting<Field>(
            rawCriteria.map((c) => `${c.descending ? '-' : ''}${c.field}`),
            [],
          );
          const expected = list
            .filter(
              (t) =>
                (filter.kind === undefined || t.kind === filter.kind) &&
                (filter.archived === undefined || String(t.archived) === filter.archived),
            )
            .sort(modelOrder(criteria))
            .map((t) => t.id);
          const page = await listPage(table(), viewed, [owner], criteria, 0, 50, filter);
          expect(page.total).toBe(expected.length);
          expect(page.items.map((t) => t.id)).toEqual(expected);
        },
      ),
      { numRuns: Number(process.env.LISTING_RUNS ?? 40) },
    );
  });

  it('a text prefix reads the range of its entries and matches as the order compares text', async () => {
    const owner = 'prefix';
    const list: Viewed[] = [
      'Apple pie',
      'apple',
      'APPLESAUCE',
      'Banana',
      'appl',
      `${'x'.repeat(170)}yz`,
      `${'x'.repeat(170)}ab`,
    ].map((name, i) => ({
      id: `00000000-0000-4000-a000-00000000000${i}`,
      organization_id: owner,
      created_at: '2026-11-01T00:00:00.000Z',
      name,
      amount: i,
      kind: 'active',
      archived: false,
    }));
    for (const entity of list) await transact(table(), listedWrites(table(), viewed, entity));
    const names = async (prefix: string, maxMatches = 10) =>
      (
        await listMatchingPage(
          table(),
          viewed,
          [owner],
          { field: 'name', prefix, maxMatches },
          parseListSorting<Field>(['name'], []),
          0,
          10,
        )
      ).items.map((t) => t.name);
    expect(await names('APPLE')).toEqual(['apple', 'Apple pie', 'APPLESAUCE']);
    expect(await names('appl')).toEqual(['appl', 'apple', 'Apple pie', 'APPLESAUCE']);
    // Past the part of a name the key holds, the rest is compared in memory.
    expect(await names(`${'x'.repeat(170)}y`)).toEqual([`${'x'.repeat(170)}yz`]);
    expect(await names('cherry')).toEqual([]);
    await expect(names('a', 3)).rejects.toBeInstanceOf(TooManyMatches);
  });
});

describe('segmented listing: segments chosen by their values, ordered among themselves', () => {
  const kinds = ['active', 'canceled', 'trialing'];

  it('every page of every order, for any choice of segments, is the slice of the model order', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.oneof(thing('s1'), thing('s2')), { selector: (t) => t.id, maxLength: 30 }),
        fc.array(criterion, { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 1, max: 7 }),
        fc.subarray(kinds),
        async (generated, rawCriteria, limit, kept) => {
          run++;
          const list = generated.map((t) => ({ ...t, organization_id: `${t.organization_id}-${run}` }));
          await insertAll(list, segmented);
          const criteria = parseListSorting<Field>(
            rawCriteria.map((c) => `${c.descending ? '-' : ''}${c.field}`),
            ['-created_at'],
          );
          const wanted = list.filter((t) => kept.includes(t.kind));
          const expected = [...wanted].sort(modelOrder(criteria)).map((t) => t.id);
          const keep = (values: { kind?: unknown }) =>
            kept.includes((values.kind as { choice: string } | undefined)?.choice ?? '');
          const seen: string[] = [];
          for (let page = 0; page * limit < wanted.length + limit; page++) {
            const owners = [`s1-${run}`, `s2-${run}`];
            const result = await listPage(
              table(),
              segmented,
              owners,
              criteria,
              page * limit,
              limit,
              {},
              keep,
            );
            expect(result.total).toBe(wanted.length);
            seen.push(...result.items.map((t) => t.id));
          }
          expect(seen).toEqual(expected);
        },
      ),
      { numRuns: Number(process.env.LISTING_RUNS ?? 40) },
    );
  });

  it('an entity that changes segment leaves the old one (entries and count) and joins the new one', async () => {
    const owner = 'moving';
    const thing1: Thing = {
      id: '00000000-0000-4000-a000-000000000001',
      organization_id: owner,
      created_at: '2026-11-01T00:00:00.000Z',
      name: 'a',
      amount: 0,
      kind: 'active',
    };
    await insertAll([thing1], segmented);
    const moved = { ...thing1, kind: 'canceled', name: 'b' };
    await transact(table(), relistedWrites(table(), segmented, thing1, moved));
    const byKind = (kind: string) => (values: { kind?: unknown }) =>
      (values.kind as { choice: string } | undefined)?.choice === kind;
    const criteria = parseListSorting<Field>(['name'], []);
    expect(await listPage(table(), segmented, [owner], criteria, 0, 10, {}, byKind('active'))).toEqual({
      items: [],
      total: 0,
    });
    expect(await listPage(table(), segmented, [owner], criteria, 0, 10, {}, byKind('canceled'))).toEqual({
      items: [moved],
      total: 1,
    });
    // Entries for the non-segment fields and the first segment field, and one count per segment.
    const stored = await db.client.send(
      new QueryCommand({
        TableName: db.tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': `LIST#PRODUCT#${owner}` },
      }),
    );
    const counts = (stored.Items ?? []).filter((i) => String(i.SK).startsWith('#COUNT#'));
    expect(counts.map((c) => Number(c.entry_count)).sort()).toEqual([0, 1]);
    expect((stored.Items?.length ?? 0) - counts.length).toBe(3);
  });
});
