/**
 * Meters: the meter item (`METER#<id>`) and its entries in the organization's meter list
 * (`shared/data/listing.ts`), always written in one transaction with the meter's webhook event.
 * Usage (events, customer meters) lives elsewhere: a meter item changes only when its definition
 * does, or once when the consumer marks it billed (`last_billed_event_id`, which freezes its filter
 * and aggregation).
 *
 * **Which products price a meter.** Beside it, `METER#<id>` / `#PRICED` counts the products that
 * price it: live, unarchived products with an unarchived metered price naming it (a product counts
 * once, whatever its number of such prices). Create and Update Product move it in their own
 * transaction (`meterReferenceWrites`), and a product that starts pricing a meter checks there that
 * the meter is not archived; archiving a meter checks there that no product prices it
 * (`replaceMeter`). Both sides touch both items, so of a concurrent archive and a product pricing the
 * meter exactly one passes: a product never prices an archived meter (the hosted service refuses
 * the archive with 422 at `is_archived`, "still attached to active products").
 */

import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import type { MeterAggregation, MeterFilter } from '../domain/meter.ts';
import { keyId, readMany } from './catalog.ts';
import { createOnly, run, type Table, type TransactItem, transact } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import {
  type Listing,
  type ListPage,
  listedWrites,
  listRecordPage,
  type RecordPageQuery,
  relistedWrites,
} from './listing.ts';
import { item, type Metadata, record } from './records.ts';
import { keys } from './table.ts';

export type MeterUnit = 'scalar' | 'token' | 'custom';

export interface MeterRecord {
  id: string;
  organization_id: string;
  name: string;
  unit: MeterUnit;
  custom_label: string | null;
  custom_multiplier: number | null;
  filter: MeterFilter;
  aggregation: MeterAggregation;
  metadata: Metadata;
  created_at: string;
  modified_at: string | null;
  archived_at: string | null;
  /**
   * The meter's past archives, `[from, to)` each (archived at, unarchived at), the latest last, at most
   * `MAX_ARCHIVED_PERIODS`: an event that arrived in one is never counted, whenever the consumer
   * reaches it (shared/services/meter-aggregation.ts `meterCounts`). Not in the API's answers.
   */
  archived_periods: readonly ArchivedPeriod[];
  /**
   * The last event the meter has billed, set by the usage consumer (the hosted service's
   * `last_billed_event`): once set, `filter` and `aggregation` are frozen. Null until then.
   */
  last_billed_event_id: string | null;
  /**
   * Which definition (`filter` and `aggregation`) the meter counts by: 1 at creation, raised by every
   * update that changes either. Usage the aggregator folded under another definition is not counted
   * (`shared/data/customer-meters.ts` `ofDefinition`): a change restarts the meter's counts.
   */
  definition_version: number;
  /** Raised by every write: each change is conditioned on the version it read. */
  version: number;
}

/** A past archive of a meter: from its `archived_at` until it was unarchived (ISO instants). */
export interface ArchivedPeriod {
  from: string;
  to: string;
}

/**
 * Past archives kept per meter (the oldest dropped first): 20 keep the meter and its four list
 * entries about 1.5 KB larger at most. An event of a dropped period could only be counted by a
 * consumer reaching it after 20 more archives and unarchives, or by an operator's recount.
 */
export const MAX_ARCHIVED_PERIODS = 20;

/** A meter as the table holds it: metadata as its JSON text (DynamoDB numbers cannot hold every JSON number). */
export type StoredMeter = Omit<MeterRecord, 'metadata'> & { metadata: string };

export const storedMeter = (meter: MeterRecord): StoredMeter => ({
  ...meter,
  metadata: JSON.stringify(meter.metadata),
});

export function meterRecord(item: Record<string, unknown>): MeterRecord {
  const meter = record<MeterRecord & { metadata: unknown }>(item);
  const metadata = typeof meter.metadata === 'string' ? JSON.parse(meter.metadata) : meter.metadata;
  // Meters stored before archives were kept have none recorded; before definition versions, the first.
  return {
    ...meter,
    metadata,
    archived_periods: meter.archived_periods ?? [],
    definition_version: meter.definition_version ?? 1,
  };
}

export type MeterSortField = 'created_at' | 'name';
export type MeterListFilter = 'is_archived';

/** The meter list: an entry per sort field in the whole list and in the view of its archived state. */
export const meterListing: Listing<StoredMeter, MeterSortField, MeterListFilter> = {
  partition: 'meterList',
  entity: 'meter_entry',
  owner: (meter) => meter.organization_id,
  fields: {
    created_at: (meter) => ({ time: meter.created_at }),
    name: (meter) => ({ text: meter.name }),
  },
  views: {
    is_archived: (meter) => String(meter.archived_at !== null),
  },
};

export const meterItem = (meter: StoredMeter) => item(keys.meter(meter.id), 'meter', meter);

/** A new meter, its list entries and `outbox` (its `meter.created` event), in one transaction. */
export async function insertMeter(
  table: Table,
  meter: MeterRecord,
  outbox: readonly TransactItem[] = [],
): Promise<void> {
  const s = storedMeter(meter);
  await transact(table, [
    { Put: createOnly(table, meterItem(s)) },
    ...listedWrites(table, meterListing, s),
    ...outbox,
  ]);
}

export async function getMeter(table: Table, meterId: string): Promise<MeterRecord | undefined> {
  const result = await run(() =>
    table.doc.send(new GetCommand({ TableName: table.name, Key: keys.meter(meterId), ConsistentRead: true })),
  );
  return result.Item ? meterRecord(result.Item) : undefined;
}

/** The counter of the products pricing a meter, in the meter's partition. */
export const METER_PRICED_SORT_KEY = '#PRICED';
const pricedKey = (meterId: string) => ({ PK: keys.meter(meterId).PK, SK: METER_PRICED_SORT_KEY });

/**
 * The writes that move the meters' counts of pricing products from `before` (the meter ids a
 * product priced as it was; empty for a new product) to `after` (as it will be): a meter it starts
 * pricing is checked live and not archived and counted up, one it stops pricing counted down.
 * Ids in both: nothing.
 */
export function meterReferenceWrites(
  table: Table,
  before: ReadonlySet<string>,
  after: ReadonlySet<string>,
): TransactItem[] {
  const count = (meterId: string, by: number): TransactItem => ({
    Update: {
      TableName: table.name,
      Key: pricedKey(meterId),
      UpdateExpression: 'ADD products :by',
      ExpressionAttributeValues: { ':by': by },
    },
  });
  const started = [...after].filter((id) => !before.has(id)).sort();
  const stopped = [...before].filter((id) => !after.has(id)).sort();
  return [
    ...started.flatMap((id): TransactItem[] => [
      {
        ConditionCheck: {
          TableName: table.name,
          Key: keys.meter(id),
          ConditionExpression: 'attribute_exists(PK) AND attribute_type(archived_at, :null)',
          ExpressionAttributeValues: { ':null': 'NULL' },
        },
      },
      count(id, 1),
    ]),
    ...stopped.map((id) => count(id, -1)),
  ];
}

/** A meter a product was to price was archived after it was read: nothing was written. */
export class MeterArchivedMeanwhile extends Error {
  constructor() {
    super('a meter was archived since it was read');
    this.name = 'MeterArchivedMeanwhile';
  }
}

/**
 * A transaction that carried `meterReferenceWrites` failed: if one of their checks is what failed,
 * `MeterArchivedMeanwhile` (read the meters again and decide again), else the error as it was.
 */
export function meterReferenceFailure(error: unknown, writes: readonly TransactItem[]): unknown {
  if (!(error instanceof ConditionFailed)) return error;
  // The reference writes are last in the transaction (see the callers): their reasons are the tail.
  const tail = error.reasons.slice(error.reasons.length - writes.length);
  return tail.some((reason, i) => reason === 'ConditionalCheckFailed' && writes[i]?.ConditionCheck)
    ? new MeterArchivedMeanwhile()
    : error;
}

/** Archiving a meter that products still price: nothing was written. */
export class MeterPriced extends Error {
  constructor() {
    super('products still price this meter');
    this.name = 'MeterPriced';
  }
}

/** The meter changed between the read and the write: nothing was written. */
export class MeterChanged extends Error {
  constructor() {
    super('meter changed since it was read');
    this.name = 'MeterChanged';
  }
}

/**
 * Replaces a meter with its new state, moves its list entries and writes `outbox`, in one
 * transaction conditioned on the meter's version as read.
 */
export async function replaceMeter(
  table: Table,
  before: MeterRecord,
  after: MeterRecord,
  outbox: readonly TransactItem[] = [],
): Promise<void> {
  const next = storedMeter({ ...after, version: before.version + 1 });
  const archiving = before.archived_at === null && after.archived_at !== null;
  try {
    await transact(table, [
      {
        Put: {
          TableName: table.name,
          Item: meterItem(next),
          ConditionExpression: 'version = :version',
          ExpressionAttributeValues: { ':version': before.version },
        },
      },
      ...relistedWrites(table, meterListing, storedMeter(before), next),
      ...outbox,
      // Last: no product prices it (see above).
      ...(archiving
        ? [
            {
              ConditionCheck: {
                TableName: table.name,
                Key: pricedKey(before.id),
                ConditionExpression: 'attribute_not_exists(products) OR products <= :none',
                ExpressionAttributeValues: { ':none': 0 },
              },
            },
          ]
        : []),
    ]);
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    if (error.reasons[0] === 'ConditionalCheckFailed') throw new MeterChanged();
    if (archiving && error.reasons.at(-1) === 'ConditionalCheckFailed') throw new MeterPriced();
    throw error;
  }
}

/** Meters by id, in one batch (strongly consistent): those that exist. For metered prices. */
export async function getMeters(table: Table, ids: readonly string[]): Promise<Map<string, MeterRecord>> {
  if (ids.length === 0) return new Map();
  const found = await readMany(
    table,
    ids.map((id) => keys.meter(id)),
  );
  const meters = new Map<string, MeterRecord>();
  for (const id of ids) {
    const item = found.get(keyId(keys.meter(id)));
    if (item) meters.set(id, meterRecord(item));
  }
  return meters;
}

export type MeterQuery = RecordPageQuery<MeterSortField, MeterListFilter>;

/** A page of meters and the total matching, from the organizations' meter lists. */
export const listMeterPage = (table: Table, query: MeterQuery): Promise<ListPage<MeterRecord>> =>
  listRecordPage(table, meterListing, query, meterRecord);

/** IAM (shared/data/grants.ts). */
export const access = {
  /** One transaction: the meter, its list entries and counts, its `meter.created` event. */
  insertMeter: [
    { actions: ['dynamodb:PutItem'], leadingKeys: ['meter', 'meterList', 'event'] },
    { actions: ['dynamodb:UpdateItem'], leadingKeys: ['meterList'] },
  ],
  getMeter: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['meter'] }],
  /** The meters a product's new metered prices name, in one batch. */
  getMeters: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['meter'] }],
  /**
   * One transaction: the meter (on its version), its entries moved in step, its `meter.updated`
   * event; an archive checks the products pricing it.
   */
  replaceMeter: [
    { actions: ['dynamodb:PutItem'], leadingKeys: ['meter', 'meterList', 'event'] },
    { actions: ['dynamodb:DeleteItem', 'dynamodb:UpdateItem'], leadingKeys: ['meterList'] },
    { actions: ['dynamodb:ConditionCheckItem'], leadingKeys: ['meter'] },
  ],
  /** In a product's transaction: the meters it starts pricing checked, the counts moved. */
  meterReferenceWrites: [
    { actions: ['dynamodb:ConditionCheckItem', 'dynamodb:UpdateItem'], leadingKeys: ['meter'] },
  ],
  listMeterPage: [{ actions: ['dynamodb:Query'], leadingKeys: ['meterList'] }],
} as const satisfies DataAccess;
