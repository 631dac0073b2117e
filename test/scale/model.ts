/**
 * What one request of an operation costs and where it lands, from the calls the recorder saw
 * (`recorder.ts`): round trips, items, true units, DynamoDB Local's units, and the hottest partition
 * with the per-tenant ceiling it sets.
 *
 * Hot partitions: a partition a request writes (or reads) is *shared* when every repetition of the
 * case touched it, each repetition creating or changing its own object: an organization's list
 * partition, a product every signup checks, the caller's token. A partition only one repetition
 * touched is the new object's own and sets no ceiling on the rate of such requests. The ceiling is
 * DynamoDB's per-partition limit (1,000 WCU/s, 3,000 RCU/s) over the units one request puts on the
 * hottest shared partition.
 */
import type { RecordedCall } from './recorder.ts';

export const PARTITION_WCU_PER_SECOND = 1_000;
export const PARTITION_RCU_PER_SECOND = 3_000;

export interface RequestCost {
  roundTrips: number;
  itemsWritten: number;
  itemsChecked: number;
  itemsRead: number;
  indexWrites: number;
  trueWru: number;
  trueRru: number;
  localWru: number;
  localRru: number;
  /** Units per partition (table writes, local-index writes on the item's partition; global-index writes as `<index>:<key>`). */
  writePartitions: Map<string, number>;
  readPartitions: Map<string, number>;
  /** Bytes of the largest transaction (DynamoDB's limit: 4 MB) and its actions (limit 100). */
  largestTransaction: { actions: number; bytes: number };
}

const add = (map: Map<string, number>, key: string, units: number) =>
  map.set(key, (map.get(key) ?? 0) + units);

export function requestCost(calls: RecordedCall[]): RequestCost {
  const cost: RequestCost = {
    roundTrips: calls.length,
    itemsWritten: 0,
    itemsChecked: 0,
    itemsRead: 0,
    indexWrites: 0,
    trueWru: 0,
    trueRru: 0,
    localWru: 0,
    localRru: 0,
    writePartitions: new Map(),
    readPartitions: new Map(),
    largestTransaction: { actions: 0, bytes: 0 },
  };
  for (const call of calls) {
    if (call.kind === 'write') {
      cost.localWru += call.localUnits;
      for (const a of call.accesses) {
        if (a.action === 'check') cost.itemsChecked++;
        else if (!call.failed) cost.itemsWritten++;
        cost.trueWru += a.units;
        add(cost.writePartitions, a.partition, a.units);
      }
      for (const w of call.indexWrites) {
        cost.indexWrites++;
        cost.trueWru += w.units;
        add(
          cost.writePartitions,
          w.kind === 'local' ? w.partitionKey : `${w.index}:${w.partitionKey}`,
          w.units,
        );
      }
      if (call.command === 'TransactWriteItems') {
        const bytes = call.accesses.reduce((s, a) => s + a.bytes, 0);
        if (bytes > cost.largestTransaction.bytes)
          cost.largestTransaction = { actions: call.accesses.length, bytes };
      }
    } else {
      cost.localRru += call.localUnits;
      for (const a of call.accesses) {
        cost.itemsRead += a.action === 'get' ? (a.bytes > 0 ? 1 : 0) : 0;
        cost.trueRru += a.units;
        add(cost.readPartitions, a.partition, a.units);
      }
      cost.itemsRead += call.returned ?? 0;
    }
  }
  return cost;
}

export interface Hottest {
  partition: string;
  units: number;
  /** Requests per second one such partition (or sharded family) allows. */
  ceiling: number;
  /** A family of hash-chosen shards (`SHARDED_PARTITIONS`): how many. */
  shards?: number;
}

/**
 * The hottest partition touched by every repetition (mean units per request), or undefined when no
 * partition is shared (each request touches only its own object's partitions).
 */
export function hottestShared(
  perRequest: Map<string, number>[],
  limitPerSecond: number,
): Hottest | undefined {
  if (perRequest.length < 2) throw new Error('hot partitions need at least two repetitions');
  const families = new Map<string, number>();
  const folded = perRequest.map((m) => foldShards(m, families));
  const [first, ...rest] = folded as [Map<string, number>, ...Map<string, number>[]];
  let best: Hottest | undefined;
  for (const partition of first.keys()) {
    if (!rest.every((m) => m.has(partition))) continue;
    const units = folded.reduce((s, m) => s + (m.get(partition) ?? 0), 0) / folded.length;
    const shards = families.get(partition) ?? 1;
    if (units > 0 && (!best || units / shards > best.units / (best.shards ?? 1))) {
      best = {
        partition,
        units,
        ceiling: (limitPerSecond * shards) / units,
        ...(shards > 1 ? { shards } : {}),
      };
    }
  }
  return best;
}

/**
 * Partitions written in shards chosen by a hash (`…#S<k>`, `SHARDED_PARTITIONS`): a request's units
 * on any of its shards spread, over many requests, evenly over all of them, so the family is one
 * partition of `shards` times the limit: `<family>#S<shard> (N shards)`, its units summed.
 */
export const SHARDED_PARTITIONS: readonly { prefix: string; shards: number }[] = [
  { prefix: 'GSI1:UEVLIST#', shards: 16 },
  { prefix: 'UEVNAME#', shards: 16 },
  // An organization's customer list (`customerListing`, shared/data/customers.ts): 16 shards by id.
  { prefix: 'LIST#CUSTOMER#', shards: 16 },
  // An organization's and a product's subscription lists (`subscriptionListings`,
  // shared/data/subscriptions.ts): 16 shards by id.
  { prefix: 'LIST#SUBSCRIPTION#', shards: 16 },
  { prefix: 'LIST#SUBSCRIPTION-PRODUCT#', shards: 16 },
  // An organization's product list and its views (`productListing`, shared/data/products.ts): 16
  // shards by id, each view's partition after its shard (`LIST#PRODUCT#<org>#S<k>#is_archived=…`).
  { prefix: 'LIST#PRODUCT#', shards: 16 },
];
/** `#S<k>` at the end of the key, or before a list view's `#<name>=<value>` parts. */
const SHARD_SUFFIX = /#S\d+((?:#[a-z_]+=[^#]*)*)$/;

function foldShards(units: Map<string, number>, families: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [partition, value] of units) {
    const family = SHARDED_PARTITIONS.find(
      (f) => partition.startsWith(f.prefix) && SHARD_SUFFIX.test(partition),
    );
    const key = family
      ? `${partition.replace(SHARD_SUFFIX, '#S<shard>$1')} (${family.shards} shards)`
      : partition;
    if (family) families.set(key, family.shards);
    out.set(key, (out.get(key) ?? 0) + value);
  }
  return out;
}

export interface CaseModel {
  key: string;
  label: string;
  operation: string;
  status: number;
  /** Means over the repetitions (round trips: the maximum). */
  roundTrips: number;
  itemsWritten: number;
  itemsChecked: number;
  itemsRead: number;
  indexWrites: number;
  trueWru: number;
  localWru: number;
  trueRru: number;
  localRru: number;
  hotWrite: Hottest | undefined;
  hotRead: Hottest | undefined;
  largestTransaction: { actions: number; bytes: number };
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

export function caseModel(
  c: { key: string; label: string; operation: string; status: number },
  repetitions: RecordedCall[][],
): CaseModel {
  const costs = repetitions.map(requestCost);
  return {
    ...c,
    roundTrips: Math.max(...costs.map((x) => x.roundTrips)),
    itemsWritten: mean(costs.map((x) => x.itemsWritten)),
    itemsChecked: mean(costs.map((x) => x.itemsChecked)),
    itemsRead: mean(costs.map((x) => x.itemsRead)),
    indexWrites: mean(costs.map((x) => x.indexWrites)),
    trueWru: mean(costs.map((x) => x.trueWru)),
    localWru: mean(costs.map((x) => x.localWru)),
    trueRru: mean(costs.map((x) => x.trueRru)),
    localRru: mean(costs.map((x) => x.localRru)),
    hotWrite: hottestShared(
      costs.map((x) => x.writePartitions),
      PARTITION_WCU_PER_SECOND,
    ),
    hotRead: hottestShared(
      costs.map((x) => x.readPartitions),
      PARTITION_RCU_PER_SECOND,
    ),
    largestTransaction: costs.reduce(
      (best, x) => (x.largestTransaction.bytes > best.bytes ? x.largestTransaction : best),
      { actions: 0, bytes: 0 },
    ),
  };
}
