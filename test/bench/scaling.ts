/**
 * 3. Scaling of List Wallets: customers with 10, 100 and the most wallets a customer can have
 * (`WALLETS_PER_CUSTOMER_MAX`: one per currency and wallet type), bulk-inserted with BatchWriteItem
 * as exactly the items `insertWallet` writes (wallet and its uniqueness slot), `wallet_count` set on
 * the customer. Page 1 and the last page, every sorting.
 */
import { BatchWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createCustomer, createCustomerSession } from '#scripts/admin/commands.ts';
import { item, type WalletRecord } from '#shared/data/records.ts';
import { keys } from '#shared/data/table.ts';
import { WALLETS_PER_CUSTOMER_MAX } from '#shared/data/wallets.ts';
import { newId } from '#shared/domain/ids.ts';
import openapi from '#shared/generated/openapi.json' with { type: 'json' };
import type { LocalWorld } from './local-table.ts';
import { fmt, median, type SectionResult, sleep, type Table, verdict } from './report.ts';

export const SCALING_SIZES = [10, 100, WALLETS_PER_CUSTOMER_MAX] as const;
const BATCH = 25;
const IN_FLIGHT = 4;
/**
 * Whole request at the bound (session, customer, the wallets' `Query`): 320 wallets of ≈ 370 bytes
 * are 29 RRU strongly consistent, + 2 for the two `GetItem`s. docs/data-model.md, "Wallet sorting".
 */
const RRU_BUDGET = 32;
const RRU_RATIO_TARGET = 1.1;

/** The API's currencies, two wallet types each: every (currency, type) slot once, as the guard allows. */
const CURRENCIES = openapi.components.schemas.Currency.enum;
const currencyCode = (n: number) => CURRENCIES[n] as string;

async function writeAll(world: LocalWorld, items: Record<string, unknown>[]): Promise<void> {
  const batches: Record<string, unknown>[][] = [];
  for (let i = 0; i < items.length; i += BATCH) batches.push(items.slice(i, i + BATCH));
  const worker = async () => {
    for (let batch = batches.shift(); batch; batch = batches.shift()) {
      let pending = batch.map((Item) => ({ PutRequest: { Item } }));
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > 8) throw new Error('BatchWrite kept returning unprocessed items');
        if (attempt > 0) await sleep(20 * 2 ** attempt);
        const result = await world.admin.table.doc.send(
          new BatchWriteCommand({ RequestItems: { [world.table.name]: pending } }),
        );
        pending = (result.UnprocessedItems?.[world.table.name] ?? []) as typeof pending;
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

interface Seeded {
  size: number;
  token: string;
  seedMs: number;
}

async function seedCustomer(world: LocalWorld, size: number): Promise<Seeded> {
  const started = performance.now();
  const customer = await createCustomer(world.admin, {
    organizationId: world.demo.organization_id,
    email: `scale-${size}-${newId().slice(0, 8)}@bench.example`,
  });
  const origin = Date.UTC(2025, 0, 1);
  const items: Record<string, unknown>[] = [];
  for (let i = 0; i < size; i++) {
    const wallet: WalletRecord = {
      id: newId(),
      customer_id: customer.id,
      organization_id: customer.organization_id,
      wallet_type: i % 2 === 0 ? 'usage' : 'billing',
      currency: currencyCode(Math.floor(i / 2)),
      // Repeats and negatives, so the balance orders have ties to break (as in the demo seed).
      balance: ((i * 7919) % 5000) - 1000,
      created_at: new Date(origin + i * 1000).toISOString(),
      modified_at: null,
    };
    items.push(item(keys.wallet(customer.id, wallet.id), 'wallet', wallet));
    items.push({
      ...keys.walletSlot(customer.id, wallet.currency, wallet.wallet_type),
      entity: 'wallet_slot',
      wallet_id: wallet.id,
    });
  }
  await writeAll(world, items);
  await world.admin.table.doc.send(
    new UpdateCommand({
      TableName: world.table.name,
      Key: keys.customer(customer.id),
      UpdateExpression: 'SET wallet_count = :n',
      ExpressionAttributeValues: { ':n': size },
    }),
  );
  const { token } = await createCustomerSession(world.admin, { customer });
  return { size, token, seedMs: performance.now() - started };
}

interface Measured {
  rru: number;
  queryRru: number;
  roundTrips: number;
  ms: number;
  total: number;
  items: number;
}

/** One List Wallets request per customer, round after round (sizes interleaved against drift). */
async function measureSizes(
  world: LocalWorld,
  seeded: Seeded[],
  query: string,
  repetitions: number,
): Promise<Measured[]> {
  const samples: Measured[][] = seeded.map(() => []);
  for (let i = 0; i < repetitions + 2; i++) {
    for (const [k, customer] of seeded.entries()) {
      world.meter.reset();
      const started = performance.now();
      const reply = await world.call('list-wallets', 'GET', `/v1/customer-portal/wallets/?${query}`, {
        token: customer.token,
      });
      const ms = performance.now() - started;
      if (reply.status !== 200) throw new Error(`list wallets ${query}: ${reply.status} ${reply.body}`);
      if (i < 2) continue;
      const body = JSON.parse(reply.body ?? '{}') as {
        items: unknown[];
        pagination: { total_count: number };
      };
      const reads = world.meter.calls.filter((c) => c.kind === 'read');
      samples[k]?.push({
        rru: reads.reduce((s, c) => s + c.units, 0),
        queryRru: reads.filter((c) => c.command === 'QueryCommand').reduce((s, c) => s + c.units, 0),
        roundTrips: world.meter.calls.length,
        ms,
        total: body.pagination.total_count,
        items: body.items.length,
      });
    }
  }
  return samples.map((list) => ({
    rru: median(list.map((s) => s.rru)),
    queryRru: median(list.map((s) => s.queryRru)),
    roundTrips: Math.max(...list.map((s) => s.roundTrips)),
    ms: median(list.map((s) => s.ms)),
    total: list[0]?.total ?? Number.NaN,
    items: list[0]?.items ?? 0,
  }));
}

const SORTINGS: { label: string; query: string }[] = [
  { label: '-created_at (default)', query: '' },
  { label: 'created_at', query: 'sorting=created_at' },
  { label: 'balance', query: 'sorting=balance' },
  { label: '-balance', query: 'sorting=-balance' },
  { label: 'balance,-created_at', query: 'sorting=balance&sorting=-created_at' },
  { label: '-balance,created_at', query: 'sorting=-balance&sorting=created_at' },
];

export async function scaling(world: LocalWorld, options: { repetitions: number }): Promise<SectionResult> {
  const seeded: Seeded[] = [];
  for (const size of SCALING_SIZES) seeded.push(await seedCustomer(world, size));
  const smallest = seeded[0] as Seeded;
  const largest = seeded.at(-1) as Seeded;

  const pageOne: Table = {
    title: 'Page 1 (limit 10) by total number of wallets',
    note: `read units: whole request (session + customer + query); target at ${largest.size} wallets (the most a customer can have): ≤ ${RRU_BUDGET} RRU`,
    columns: [
      'sorting',
      ...SCALING_SIZES.map((n) => `RRU @${n.toLocaleString('en-US')}`),
      'verdict',
      ...SCALING_SIZES.map((n) => `ms @${n.toLocaleString('en-US')}`),
      `time ratio ${largest.size} / ${smallest.size}`,
      'round trips',
      'total_count',
    ],
    rows: [],
  };
  for (const sorting of SORTINGS) {
    const query = `limit=10${sorting.query ? `&${sorting.query}` : ''}`;
    const results = await measureSizes(world, seeded, query, options.repetitions);
    const first = results[0] as Measured;
    const last = results.at(-1) as Measured;
    const countsRight = results.every(
      (r, i) => r.total === seeded[i]?.size && r.items === Math.min(10, r.total),
    );
    pageOne.rows.push([
      sorting.label,
      ...results.map((r) => fmt(r.rru, 1)),
      verdict(last.rru <= RRU_BUDGET),
      ...results.map((r) => fmt(r.ms, 1)),
      `${fmt(last.ms / first.ms, 2)}×`,
      String(Math.max(...results.map((r) => r.roundTrips))),
      countsRight ? 'PASS (= wallet_count)' : 'MISS',
    ]);
  }

  const lastPage = Math.ceil(largest.size / 10);
  const deep: Table = {
    title: `Last page (page ${lastPage}, limit 10) against page 1, at ${largest.size} wallets`,
    note: `the customer's wallets are read whole and ordered in memory: the last page costs what page 1 does (ratio ≤ ${RRU_RATIO_TARGET}×)`,
    columns: [
      'sorting',
      'RRU page 1',
      `RRU page ${lastPage}`,
      'RRU ratio',
      'verdict',
      'ms page 1',
      `ms page ${lastPage}`,
    ],
    rows: [],
  };
  for (const sorting of [SORTINGS[0], SORTINGS[5]] as { label: string; query: string }[]) {
    const [one] = await measureSizes(
      world,
      [largest],
      `limit=10${sorting.query ? `&${sorting.query}` : ''}`,
      options.repetitions,
    );
    const [end] = await measureSizes(
      world,
      [largest],
      `limit=10&page=${lastPage}${sorting.query ? `&${sorting.query}` : ''}`,
      options.repetitions,
    );
    const a = one as Measured;
    const z = end as Measured;
    deep.rows.push([
      sorting.label,
      fmt(a.rru, 1),
      fmt(z.rru, 1),
      `${fmt(z.rru / a.rru, 2)}×`,
      verdict(z.rru <= RRU_RATIO_TARGET * a.rru),
      fmt(a.ms, 1),
      fmt(z.ms, 1),
    ]);
  }

  return {
    id: 'scaling',
    title: '3. Scaling of List Wallets',
    method: [
      `Customers with ${SCALING_SIZES.map((n) => n.toLocaleString('en-US')).join(', ')} wallets in DynamoDB Local, bulk-inserted with BatchWriteItem as the`,
      'items insertWallet writes (wallet, uniqueness slot), wallet_count set on the customer',
      `(seeded in ${seeded.map((s) => `${fmt(s.seedMs / 1000, 1)} s`).join(' / ')}). Real handler in process; ${options.repetitions} requests per cell after 2 warm-ups, sizes interleaved,`,
      `medians. ${largest.size} is the most wallets one customer can have (one per currency and wallet type).`,
    ],
    tables: [pageOne, deep],
    notes: [
      "total_count comes from the customer item's wallet_count (one GetItem): no count query, no scan, whatever the total.",
      "Every order is served from one strongly consistent Query of the customer's WALLET# items, ordered in memory (no index: an LSI would cap each partition at 10 GB). Read units grow with the customer's wallets, up to the bound, and not with the page.",
    ],
  };
}
