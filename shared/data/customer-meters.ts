/**
 * Customer meters: what the meter aggregator (`shared/services/meter-aggregation.ts`) keeps from the
 * usage events the table's stream delivers, and what Get / List Customer Meters read.
 *
 * One partition per (customer, meter), `CMETER#<customer meter id>` (the id derived from both,
 * `customerMeterId`), holds:
 *
 * - **the customer meter** (`SK` = its `PK`): ids, `created_at` (the first batch that counted an
 *   event for it), listed in `GSI1` by `CMLIST#<organization>` and its creation;
 * - **one aggregate per hour of arrival** (`SK` = `HOUR#<yyyy-mm-ddThh>`, the event's `ingested_at`):
 *   the fold state of the events that arrived in that hour (`state`: count; exact sum; extreme; as
 *   `shared/domain/meter.ts` folds them), `applied` (per stream shard, the highest sequence number
 *   folded in), `version` (raised by every write; each write is conditioned on the version read);
 * - **for a `unique` meter, one item per distinct value and hour** (`SK` = `VALUE#<hour>#<value>`):
 *   a put of the value is its own idempotent claim (writing it twice is writing it once), so a
 *   distinct count is the number of distinct values over a period's items.
 *
 * The claim and the write are one item write: the hour aggregate holds both the fold and the
 * highest applied sequence per shard, so they cannot come apart.
 *
 * **Definitions.** Hour aggregates and value items record the meter's `definition_version` they were
 * folded under (absent: 1, written before versions). A meter's filter or aggregation can change
 * until it is billed; every read here keeps only the usage of the meter's current definition
 * (`ofDefinition`), so a change restarts the counts rather than mixing two definitions (a sum of
 * one property with a count, or two filters' events). The aggregator starts an hour of an older
 * definition afresh.
 *
 * **Roll-up.** An hour is closed once no stream record can still be folded into it (24 h of stream
 * retention, and the mapping's retries: `CLOSED_AFTER_HOURS`). The aggregator folds a customer
 * meter's closed hours into its own item (`rollup`: the state of every hour before `through`, under
 * one definition), a day's worth at a time, when a batch counts for it. A read of all time folds the
 * roll-up and the hours from `through` on (at most about three days of them), not every hour
 * since the first. Hours are never deleted.
 *
 * **Days.** The same roll-up step writes, for each UTC day whose 24 hours are all closed and read
 * by it, **one day aggregate** (`SK` = `DAY#<yyyy-mm-dd>`: the fold of the day's hour aggregates of
 * the meter's current definition, `definition_version`, `hours`); a day without usage has none.
 * The roll-up's `days_from` says from which day on they exist (every day from it whose end is at or
 * before `through`: `coveredDays`). A window's read (a subscription's period) takes the whole days
 * it spans from their day aggregates and only its edges and the days not rolled up yet from hours:
 * a year's period reads about 365 small items, not 8,760 hours. A `unique` meter's day aggregate
 * says only that the day has events (its distinct values would not fit an item: they are day values).
 *
 * **Unique roll-up.** A `unique` meter's roll-up puts, for each distinct value of the closed hours
 * it reads, **one seen-value item** (`SK` = `SEEN#<value>`, its `definition_version`): one per
 * value, whatever the hours it appeared in. Its `rollup` keeps `through` and `hours` (its `state`
 * is empty). The all-time distinct values are then the seen values of the current definition and
 * the value items from `through` on (`readUsage`): a union, so a value seen both ways, or put by a
 * step that stopped before its roll-up was written, counts once. A step reads at most about
 * `ROLLUP_MAX_HOURS` value items and stops before the last hour it read part of
 * (`readClosedValues`).
 *
 * **Day values.** The same step puts each distinct value of the hours it reads by their UTC day
 * (`SK` = `DAYVALUE#<yyyy-mm-dd>#<value>`, its `definition_version`), from the roll-up's
 * `days_from` on; a day's values are the union of what its steps put (puts are idempotent), so
 * every day from `days_from` that ends by `through` has all of its values (`coveredDays`), as day
 * aggregates have their fold. A window of a `unique` meter reads its whole covered days from their
 * day values (one item per value and day, not per value and hour) and its edges from value items
 * by hour, and counts the union.
 */
import { createHash } from 'node:crypto';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionFailed } from '../domain/errors.ts';
import { derivedId } from '../domain/ids.ts';
import type { FoldState } from '../domain/meter.ts';
import { keyId, readMany } from './catalog.ts';
import { readGuards } from './customer-guards.ts';
import { queryAll, run, type Table } from './dynamo.ts';
import type { DataAccess } from './grants.ts';
import { ENTRY_BYTES, queryWithinBudget, type ReadBudget, readKeysWithinBudget } from './listing.ts';
import { type MeterRecord, meterRecord } from './meters.ts';

/** What of a meter its usage is read by: the definition it counts under now. */
export type MeterDefinition = Pick<MeterRecord, 'aggregation' | 'definition_version'>;

/** The definition a stored usage item (an hour aggregate, a value item) was folded under. */
export const definitionVersionOf = (item: Record<string, unknown>): number =>
  item.definition_version === undefined ? 1 : Number(item.definition_version);

/**
 * Whether a stored usage item counts for the meter as it is defined now: folded under its current
 * definition, and (for items written before definition versions, all "1") of its aggregation.
 */
export function ofDefinition(meter: MeterDefinition, item: Record<string, unknown>): boolean {
  if (definitionVersionOf(item) !== meter.definition_version) return false;
  const sk = String(item.SK ?? '');
  if (sk.startsWith(VALUE_PREFIX) || sk.startsWith(DAY_VALUE_PREFIX))
    return meter.aggregation.func === 'unique';
  if (typeof item.state !== 'string') return true;
  return (JSON.parse(item.state) as FoldState).func === meter.aggregation.func;
}

import { type CustomerRecord, customerRecord } from './records.ts';
import { indexNames, type Key, keys, listKeys, partitions } from './table.ts';

/** The id of a customer's meter: derived from (customer, meter), the same for every run. */
export const customerMeterId = (customerId: string, meterId: string): string =>
  derivedId('customer-meter', customerId, meterId);

/** The hour an ISO instant falls in, as `yyyy-mm-ddThh` (UTC): an aggregate's period bucket. */
export const hourOf = (iso: string): string => new Date(iso).toISOString().slice(0, 13);

/** The instant an hour bucket (`yyyy-mm-ddThh`, UTC) starts, in epoch ms: `hourOf`'s inverse. */
export const hourStart = (hour: string): number => Date.parse(`${hour}:00:00Z`);

export const HOUR_PREFIX = 'HOUR#';
export const VALUE_PREFIX = 'VALUE#';
export const DAY_PREFIX = 'DAY#';
/** A `unique` meter's distinct value seen in its rolled-up hours: one item per value (see "Unique roll-up"). */
export const SEEN_PREFIX = 'SEEN#';
/** A `unique` meter's distinct value of one whole rolled-up UTC day: one item per value and day (see "Unique roll-up"). */
export const DAY_VALUE_PREFIX = 'DAYVALUE#';

/** The UTC day an hour bucket (`yyyy-mm-ddThh`) falls in, as `yyyy-mm-dd`. */
export const dayOfHour = (hour: string): string => hour.slice(0, 10);
/** A day's first hour bucket (`yyyy-mm-ddT00`). */
export const firstHourOf = (day: string): string => `${day}T00`;
/** The day after a day (`yyyy-mm-dd`, UTC). */
export const dayAfter = (day: string): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + 24 * 3_600_000).toISOString().slice(0, 10);
/** The day before a day (`yyyy-mm-dd`, UTC). */
export const dayBefore = (day: string): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) - 24 * 3_600_000).toISOString().slice(0, 10);

export const dayKey = (customerMeterId: string, day: string): Key => ({
  PK: `${partitions.customerMeter}${customerMeterId}`,
  SK: `${DAY_PREFIX}${day}`,
});

export const hourKey = (customerMeterId: string, hour: string): Key => ({
  PK: `${partitions.customerMeter}${customerMeterId}`,
  SK: `${HOUR_PREFIX}${hour}`,
});

/** A value's key text: its canonical JSON, or its SHA-256 when long (a sort key holds at most 1,024 bytes). */
const valueKeyText = (value: string): string =>
  Buffer.byteLength(value, 'utf8') <= 512
    ? `=${value}`
    : `%${createHash('sha256').update(value).digest('hex')}`;

export const valueKey = (customerMeterId: string, hour: string, value: string): Key => ({
  PK: `${partitions.customerMeter}${customerMeterId}`,
  SK: `${VALUE_PREFIX}${hour}#${valueKeyText(value)}`,
});

export const seenKey = (customerMeterId: string, value: string): Key => ({
  PK: `${partitions.customerMeter}${customerMeterId}`,
  SK: `${SEEN_PREFIX}${valueKeyText(value)}`,
});

export const dayValueKey = (customerMeterId: string, day: string, value: string): Key => ({
  PK: `${partitions.customerMeter}${customerMeterId}`,
  SK: `${DAY_VALUE_PREFIX}${day}#${valueKeyText(value)}`,
});

export interface CustomerMeterRecord {
  id: string;
  organization_id: string;
  customer_id: string;
  meter_id: string;
  created_at: string;
  /** Its closed hours, folded (see "Roll-up" above); absent until the first roll-up. */
  rollup?: UsageRollup;
}

/** A customer meter's closed hours folded into one state (see "Roll-up" above). */
export interface UsageRollup {
  /** The first hour not folded in (`yyyy-mm-ddThh`): every hour aggregate before it is. */
  through: string;
  /** The fold of those hours' states (`state` JSON text as stored, as an hour aggregate's). */
  state: FoldState;
  /** The meter's definition the hours were folded under: a roll-up of another counts nothing. */
  definition_version: number;
  /** Hour aggregates folded in. */
  hours: number;
  /**
   * The first day (`yyyy-mm-dd`; `''`: every day) from which every day ending at or before `through`
   * has its day aggregate, when it has any usage (see "Days" above); absent on a roll-up written
   * before day aggregates, until its next roll-up.
   */
  days_from?: string;
  updated_at: string;
}

/**
 * The days (inclusive, `yyyy-mm-dd`) whose usage a customer meter's day aggregates hold, by its
 * roll-up: from `days_from` through the last day that ends at or before `through`; none before a
 * roll-up wrote day aggregates.
 */
export function coveredDays(rollup: UsageRollup | undefined): { from: string; to: string } | undefined {
  if (rollup?.days_from === undefined) return undefined;
  const to = dayBefore(dayOfHour(rollup.through));
  return rollup.days_from <= to ? { from: rollup.days_from, to } : undefined;
}

/** Hours after which no stream record can still be folded into an hour: 24 h of retention, and margin. */
export const CLOSED_AFTER_HOURS = 48;
/** A customer meter is rolled up once this many hours have closed since its last roll-up. */
export const ROLLUP_EVERY_HOURS = 24;
/** Hour aggregates one roll-up folds at most (about 1 MB read); a longer backlog takes several batches. */
export const ROLLUP_MAX_HOURS = 2000;

const HOUR_MS = 3_600_000;

/**
 * Whether a roll-up counts for the meter as it is defined now: its state, for every aggregation but
 * `unique` (whose roll-up says only which hours its seen values cover: `seenCounts`).
 */
export const rollupCounts = (meter: MeterDefinition, rollup: UsageRollup): boolean =>
  meter.aggregation.func !== 'unique' &&
  rollup.definition_version === meter.definition_version &&
  rollup.state.func === meter.aggregation.func;

/** Whether a `unique` meter's roll-up counts: its seen values hold every value before its `through`. */
export const seenCounts = (meter: MeterDefinition, rollup: UsageRollup | undefined): rollup is UsageRollup =>
  rollup !== undefined &&
  meter.aggregation.func === 'unique' &&
  rollup.definition_version === meter.definition_version &&
  rollup.state.func === 'unique';

/**
 * Whether a customer meter's closed hours are due to be rolled up at `now`, and up to which hour
 * (exclusive): a day of hours closed since its roll-up (since its creation when it has none).
 */
export function rollupDue(record: CustomerMeterRecord, now: Date): string | undefined {
  const closedBefore = hourOf(new Date(now.getTime() - CLOSED_AFTER_HOURS * HOUR_MS).toISOString());
  const since = record.rollup
    ? hourStart(record.rollup.through)
    : Date.parse(record.created_at) - 24 * HOUR_MS;
  return hourStart(closedBefore) - since >= ROLLUP_EVERY_HOURS * HOUR_MS ? closedBefore : undefined;
}

/** A hour aggregate as stored (`state` JSON: exact sums are decimal strings). */
export interface HourAggregate {
  customer_meter_id: string;
  hour: string;
  /** The fold of the hour's events; for `unique`, the values are in their own items (`values` empty). */
  state: FoldState;
  /** Per stream shard id, the highest sequence number folded in (padded, `orderedSequence`). */
  applied: Record<string, string>;
  /** The meter's definition the state was folded under (`MeterRecord.definition_version`). */
  definition_version: number;
  version: number;
  updated_at: string;
}

export const customerMeterListPartition = (organizationId: string): string =>
  `${partitions.customerMeterList}${organizationId}`;

export function storedCustomerMeter(meter: CustomerMeterRecord): Record<string, unknown> {
  const { rollup, ...fields } = meter;
  return {
    ...keys.customerMeter(meter.id),
    GSI1PK: customerMeterListPartition(meter.organization_id),
    GSI1SK: `${meter.created_at}#${meter.id}`,
    entity: 'customer_meter',
    ...fields,
    ...(rollup ? { rollup: { ...rollup, state: JSON.stringify(rollup.state) } } : {}),
  };
}

export function customerMeterRecord(stored: Record<string, unknown>): CustomerMeterRecord {
  const rollup = stored.rollup as Record<string, unknown> | undefined;
  return {
    id: String(stored.id),
    organization_id: String(stored.organization_id),
    customer_id: String(stored.customer_id),
    meter_id: String(stored.meter_id),
    created_at: String(stored.created_at),
    ...(rollup
      ? {
          rollup: {
            through: String(rollup.through),
            state: JSON.parse(String(rollup.state)) as FoldState,
            definition_version: Number(rollup.definition_version),
            hours: Number(rollup.hours),
            ...(rollup.days_from === undefined ? {} : { days_from: String(rollup.days_from) }),
            updated_at: String(rollup.updated_at),
          },
        }
      : {}),
  };
}

export function hourAggregateOf(stored: Record<string, unknown>): HourAggregate {
  return {
    customer_meter_id: String(stored.customer_meter_id),
    hour: String(stored.hour),
    state: JSON.parse(String(stored.state)) as FoldState,
    applied: (stored.applied ?? {}) as Record<string, string>,
    definition_version: definitionVersionOf(stored),
    version: Number(stored.version),
    updated_at: String(stored.updated_at),
  };
}

/**
 * Every meter of an organization, archived ones too (an archived meter still counts the events that
 * arrived before it was archived): its meter list's `created_at` entries, which hold the whole record.
 */
export async function organizationMeters(table: Table, organizationId: string): Promise<MeterRecord[]> {
  const items = await queryAll(table, {
    KeyConditionExpression: 'PK = :pk AND begins_with(SK, :field)',
    ExpressionAttributeValues: {
      ':pk': listKeys.partition('meterList', organizationId),
      ':field': 'created_at#',
    },
    ConsistentRead: true,
  });
  return items.map(meterRecord);
}

/**
 * The customers some external ids name in an organization (its external-id guards, `readGuards`:
 * their old keys too while the organization is not yet migrated), by external id.
 */
export async function customersByExternalId(
  table: Table,
  organizationId: string,
  externalIds: readonly string[],
): Promise<Map<string, string>> {
  const unique = [...new Set(externalIds)];
  const { holders } = await readGuards(
    table,
    unique.map((value) => ({ organizationId, field: 'external_id', value })),
  );
  const byExternal = new Map<string, string>();
  unique.forEach((externalId, i) => {
    const holder = holders[i];
    if (holder !== undefined) byExternal.set(externalId, holder);
  });
  return byExternal;
}

/** Hour aggregates and customer meter items by key, in batches (strongly consistent). */
export const readAggregates = (table: Table, wanted: Key[]): Promise<Map<string, Record<string, unknown>>> =>
  readMany(table, wanted);

/** One hour aggregate, strongly consistent (after a lost condition): the batch read's call, one key. */
export async function getHourAggregate(table: Table, key: Key): Promise<HourAggregate | undefined> {
  const found = [...(await readMany(table, [key])).values()][0];
  return found ? hourAggregateOf(found) : undefined;
}

/** An hour aggregate as its item. */
export const storedHourAggregate = (
  owner: { organization_id: string; customer_id: string; meter_id: string },
  next: HourAggregate,
): Record<string, unknown> => ({
  ...hourKey(next.customer_meter_id, next.hour),
  entity: 'customer_meter_hour',
  ...owner,
  customer_meter_id: next.customer_meter_id,
  hour: next.hour,
  state: JSON.stringify(next.state),
  applied: next.applied,
  definition_version: next.definition_version,
  version: next.version,
  updated_at: next.updated_at,
});

/** The aggregate changed between its read and the write: nothing was written. */
export class AggregateChanged extends Error {
  constructor() {
    super('hour aggregate changed since it was read');
    this.name = 'AggregateChanged';
  }
}

/**
 * Writes an hour aggregate's next state and applied sequences: one PutItem conditioned on the
 * version read (absent when `readVersion` is undefined). Throws `AggregateChanged` when another
 * writer (a consumer on another stream shard, or this very write whose answer was lost and was
 * retried) got there first: the caller reads again and decides again.
 */
export async function writeHourAggregate(
  table: Table,
  owner: { organization_id: string; customer_id: string; meter_id: string },
  next: HourAggregate,
  readVersion: number | undefined,
): Promise<void> {
  try {
    await run(() =>
      table.doc.send(
        new PutCommand({
          TableName: table.name,
          Item: storedHourAggregate(owner, next),
          ...(readVersion === undefined
            ? { ConditionExpression: 'attribute_not_exists(PK)' }
            : {
                ConditionExpression: 'version = :version',
                ExpressionAttributeValues: { ':version': readVersion },
              }),
        }),
      ),
    );
  } catch (error) {
    if (error instanceof ConditionFailed) throw new AggregateChanged();
    throw error;
  }
}

/**
 * A distinct value of a `unique` meter in an hour, under a definition of the meter: a plain put,
 * idempotent (the same item every time; a later definition's put takes the item over).
 */
export async function putUniqueValue(
  table: Table,
  customerMeterId: string,
  hour: string,
  value: string,
  definitionVersion: number,
): Promise<void> {
  await run(() =>
    table.doc.send(
      new PutCommand({
        TableName: table.name,
        Item: {
          ...valueKey(customerMeterId, hour, value),
          entity: 'customer_meter_value',
          hour,
          value,
          definition_version: definitionVersion,
        },
      }),
    ),
  );
}

/** A customer meter's own item, unless it exists (the first batch that counts for it). */
export async function putCustomerMeter(table: Table, meter: CustomerMeterRecord): Promise<void> {
  try {
    await run(() =>
      table.doc.send(
        new PutCommand({
          TableName: table.name,
          Item: storedCustomerMeter(meter),
          ConditionExpression: 'attribute_not_exists(PK)',
        }),
      ),
    );
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}

/**
 * A customer meter's hour aggregates from `from` (from its first when undefined) through `to`
 * (inclusive), as stored, strongly consistent, at most `max`; `complete` when none past them was
 * left unread.
 */
export async function readClosedHours(
  table: Table,
  customerMeterId: string,
  from: string | undefined,
  to: string,
  max: number,
): Promise<{ items: Record<string, unknown>[]; complete: boolean }> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await run(() =>
      table.doc.send(
        new QueryCommand({
          TableName: table.name,
          KeyConditionExpression: 'PK = :pk AND SK BETWEEN :lo AND :hi',
          ExpressionAttributeValues: {
            ':pk': `${partitions.customerMeter}${customerMeterId}`,
            ':lo': `${HOUR_PREFIX}${from ?? ''}`,
            ':hi': `${HOUR_PREFIX}${to}`,
          },
          ConsistentRead: true,
          Limit: max - items.length,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      ),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start && items.length < max);
  return { items, complete: start === undefined };
}

/**
 * A `unique` customer meter's distinct-value items of the closed hours `from` (none: the first) to
 * `to` (inclusive), strongly consistent, in key order (by hour), about `max` at most: when more
 * follow, those of the last hour read are left out (it is read whole next time) and `through` is
 * that hour; when none follow, `through` is undefined. An hour with more than `max` values is read
 * whole (a roll-up always moves on).
 */
export async function readClosedValues(
  table: Table,
  customerMeterId: string,
  from: string | undefined,
  to: string,
  max: number,
): Promise<{ items: Record<string, unknown>[]; through?: string }> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  for (;;) {
    const page = await run(() =>
      table.doc.send(
        new QueryCommand({
          TableName: table.name,
          KeyConditionExpression: 'PK = :pk AND SK BETWEEN :lo AND :hi',
          ExpressionAttributeValues: {
            ':pk': `${partitions.customerMeter}${customerMeterId}`,
            ':lo': from === undefined ? VALUE_PREFIX : `${VALUE_PREFIX}${from}#`,
            ':hi': `${VALUE_PREFIX}${to}$`,
          },
          ConsistentRead: true,
          Limit: items.length >= max ? 1000 : Math.min(1000, max - items.length),
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      ),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
    if (!start) return { items };
    const last = String(items.at(-1)?.hour);
    if (items.length >= max && items.some((item) => String(item.hour) < last)) {
      return { items: items.filter((item) => String(item.hour) < last), through: last };
    }
  }
}

/**
 * Puts value items (a `unique` customer meter's seen values, its day values), 16 side by side, each
 * unless one of a later definition is there. Idempotent: a value seen again, or put again by a
 * retried batch, changes nothing.
 */
async function putValueItems(
  table: Table,
  items: readonly Record<string, unknown>[],
  definitionVersion: number,
): Promise<void> {
  for (let i = 0; i < items.length; i += 16) {
    await Promise.all(
      items.slice(i, i + 16).map(async (item) => {
        try {
          await run(() =>
            table.doc.send(
              new PutCommand({
                TableName: table.name,
                Item: { ...item, definition_version: definitionVersion },
                ConditionExpression: 'attribute_not_exists(PK) OR definition_version < :version',
                ExpressionAttributeValues: { ':version': definitionVersion },
              }),
            ),
          );
        } catch (error) {
          if (!(error instanceof ConditionFailed)) throw error;
        }
      }),
    );
  }
}

/** Puts a `unique` customer meter's seen values (`SEEN#<value>`), unless one of a later definition is there. */
export const putSeenValues = (
  table: Table,
  owner: { organization_id: string; customer_id: string; meter_id: string },
  customerMeterId: string,
  values: readonly string[],
  definitionVersion: number,
): Promise<void> =>
  putValueItems(
    table,
    values.map((value) => ({
      ...seenKey(customerMeterId, value),
      entity: 'customer_meter_seen',
      ...owner,
      value,
    })),
    definitionVersion,
  );

/**
 * Puts a `unique` customer meter's day values (`DAYVALUE#<day>#<value>`: a distinct value of the
 * hours of that UTC day a roll-up read), unless one of a later definition is there. A day's values
 * are put by the steps that read its hours, each its part (see "Unique roll-up").
 */
export const putDayValues = (
  table: Table,
  customerMeterId: string,
  values: readonly { day: string; value: string }[],
  definitionVersion: number,
): Promise<void> =>
  putValueItems(
    table,
    values.map(({ day, value }) => ({
      ...dayValueKey(customerMeterId, day, value),
      entity: 'customer_meter_day_value',
      day,
      value,
    })),
    definitionVersion,
  );

/**
 * Writes a customer meter's roll-up: its item put again with it, conditioned on the roll-up read
 * (`previous`: its `through`, or none). False when another consumer rolled it up first: nothing
 * written, and theirs stands.
 */
export async function writeRollup(
  table: Table,
  record: CustomerMeterRecord,
  rollup: UsageRollup,
  previous: string | undefined,
): Promise<boolean> {
  try {
    await run(() =>
      table.doc.send(
        new PutCommand({
          TableName: table.name,
          Item: storedCustomerMeter({ ...record, rollup }),
          ...(previous === undefined
            ? {
                ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(#rollup)',
                ExpressionAttributeNames: { '#rollup': 'rollup' },
              }
            : {
                ConditionExpression: '#rollup.#through = :through',
                ExpressionAttributeNames: { '#rollup': 'rollup', '#through': 'through' },
                ExpressionAttributeValues: { ':through': previous },
              }),
        }),
      ),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** A day aggregate: the fold of one UTC day's closed hour aggregates under one definition. */
export interface DayAggregate {
  customer_meter_id: string;
  day: string;
  state: FoldState;
  definition_version: number;
  /** Hour aggregates folded in. */
  hours: number;
  updated_at: string;
}

/**
 * Writes a customer meter's day aggregates: a put each, side by side, unless one of a later
 * definition is there (a consumer that read the meter before it was redefined loses to one that
 * read it after; two of one definition write the same fold of the same closed hours).
 */
export async function writeDayAggregates(
  table: Table,
  owner: { organization_id: string; customer_id: string; meter_id: string },
  days: readonly DayAggregate[],
): Promise<void> {
  await Promise.all(
    days.map(async (day) => {
      try {
        await run(() =>
          table.doc.send(
            new PutCommand({
              TableName: table.name,
              Item: {
                ...dayKey(day.customer_meter_id, day.day),
                entity: 'customer_meter_day',
                ...owner,
                customer_meter_id: day.customer_meter_id,
                day: day.day,
                state: JSON.stringify(day.state),
                definition_version: day.definition_version,
                hours: day.hours,
                updated_at: day.updated_at,
              },
              ConditionExpression: 'attribute_not_exists(PK) OR definition_version <= :version',
              ExpressionAttributeValues: { ':version': day.definition_version },
            }),
          ),
        );
      } catch (error) {
        if (!(error instanceof ConditionFailed)) throw error;
      }
    }),
  );
}

/** A day aggregate as an hour aggregate of its first hour (a fold to merge: windows, totals). */
const dayAsHour = (stored: Record<string, unknown>): HourAggregate => ({
  customer_meter_id: String(stored.customer_meter_id),
  hour: firstHourOf(String(stored.day)),
  state: JSON.parse(String(stored.state)) as FoldState,
  applied: {},
  definition_version: definitionVersionOf(stored),
  version: 0,
  updated_at: String(stored.updated_at),
});

/** A customer meter's hour aggregates between two hours (inclusive), strongly consistent. */
export async function readHours(
  table: Table,
  customerMeterId: string,
  from: string,
  to: string,
): Promise<HourAggregate[]> {
  const items = await queryAll(table, {
    KeyConditionExpression: 'PK = :pk AND SK BETWEEN :lo AND :hi',
    ExpressionAttributeValues: {
      ':pk': `${partitions.customerMeter}${customerMeterId}`,
      ':lo': `${HOUR_PREFIX}${from}`,
      ':hi': `${HOUR_PREFIX}${to}`,
    },
    ConsistentRead: true,
  });
  return items.map(hourAggregateOf);
}

/** The distinct values of a `unique` customer meter between two hours (inclusive). */
export async function readUniqueValues(
  table: Table,
  customerMeterId: string,
  from: string,
  to: string,
): Promise<Set<string>> {
  const items = await queryAll(table, {
    KeyConditionExpression: 'PK = :pk AND SK BETWEEN :lo AND :hi',
    ExpressionAttributeValues: {
      ':pk': `${partitions.customerMeter}${customerMeterId}`,
      ':lo': `${VALUE_PREFIX}${from}#`,
      ':hi': `${VALUE_PREFIX}${to}$`,
    },
    ProjectionExpression: '#value',
    ExpressionAttributeNames: { '#value': 'value' },
    ConsistentRead: true,
  });
  return new Set(items.map((item) => String(item.value)));
}

// ---------------------------------------------------------------------------------------------
// Reads of Get / List Customer Meters (shared/services/customer-meters.ts)
// ---------------------------------------------------------------------------------------------

/** A customer meter's own item, strongly consistent; undefined when there is none. */
export async function getCustomerMeter(table: Table, id: string): Promise<CustomerMeterRecord | undefined> {
  const result = await run(() =>
    table.doc.send(
      new GetCommand({ TableName: table.name, Key: keys.customerMeter(id), ConsistentRead: true }),
    ),
  );
  return result.Item ? customerMeterRecord(result.Item) : undefined;
}

/** A customer meter's customer and meter, in one batch read (strongly consistent). */
export async function readOwners(
  table: Table,
  record: CustomerMeterRecord,
): Promise<{ customer?: CustomerRecord; meter?: MeterRecord }> {
  const customerKey = keys.customer(record.customer_id);
  const meterKey = keys.meter(record.meter_id);
  const found = await readMany(table, [customerKey, meterKey]);
  const customer = found.get(keyId(customerKey));
  const meter = found.get(keyId(meterKey));
  return {
    ...(customer ? { customer: customerRecord(customer) } : {}),
    ...(meter ? { meter: meterRecord(meter) } : {}),
  };
}

/**
 * The customer meters that exist among these ids (by key, strongly consistent, at most 100 per
 * BatchGetItem), by id; with `budget`, within it (each item reserved at `CUSTOMER_METER_ENTRY_BYTES`).
 */
export async function readCustomerMeters(
  table: Table,
  ids: readonly string[],
  budget?: ReadBudget,
): Promise<Map<string, CustomerMeterRecord>> {
  const found = await readKeysWithinBudget(
    table,
    [...new Set(ids)].map((id) => keys.customerMeter(id)),
    CUSTOMER_METER_ENTRY_BYTES,
    budget,
  );
  const meters = new Map<string, CustomerMeterRecord>();
  for (const stored of found.values()) {
    const meter = customerMeterRecord(stored);
    meters.set(meter.id, meter);
  }
  return meters;
}

/** A customer meter's item in the organization's list (`GSI1`): at most about 400 bytes. */
export const CUSTOMER_METER_ENTRY_BYTES = 1024;

/**
 * The first `max` customer meters of an organization's list (`GSI1`, `CMLIST#<org>`, by creation),
 * and whether more follow. The index is eventually consistent: a customer meter is listed a moment
 * after the aggregator writes it.
 */
export async function listCustomerMeterEntries(
  table: Table,
  organizationId: string,
  max: number,
  budget: ReadBudget,
): Promise<{ items: CustomerMeterRecord[]; more: boolean }> {
  // One past `max`: whether more follow.
  const items = await queryWithinBudget(
    table,
    budget,
    {
      IndexName: indexNames.gsi1,
      KeyConditionExpression: 'GSI1PK = :pk',
      ExpressionAttributeValues: { ':pk': customerMeterListPartition(organizationId) },
    },
    { limit: max + 1, maxBytes: CUSTOMER_METER_ENTRY_BYTES, max: max + 1 },
  );
  return { items: items.slice(0, max).map(customerMeterRecord), more: items.length > max };
}

/**
 * What one usage item is reserved at before a Query (`ReadBudget.query`: the Limit that fits): an
 * hour aggregate measures 470–510 bytes with one stream shard in `applied`, 750 with four; a value
 * item at most about 1.2 KB. What is charged is the bytes actually read, whatever this says.
 */
export const USAGE_ITEM_MAX_BYTES = 2 * 1024;
/** Items one usage Query asks for: small reservations, so that a page's Queries run side by side. */
const USAGE_QUERY_LIMIT = 100;

/** What a customer meter has stored of its usage: its hour aggregates' states and its distinct values. */
export interface StoredUsage {
  /** Its roll-up's state, when it counts for the meter (the hours before its `through`). */
  rollup?: FoldState;
  /** The hours not rolled up. */
  hours: HourAggregate[];
  /** For a `unique` meter, its distinct values over every hour (their canonical JSON texts). */
  values: Set<string>;
}

/**
 * All the usage of a customer meter: its roll-up (on the record read) and the hour aggregates and
 * distinct-value items past it (its partition from `HOUR#<through>`: `HOUR#…` then `VALUE#…`),
 * strongly consistent, within the request's read budget (which throws `ListReadTooCostly` when they
 * do not fit). Any copy of the record will do (the list's index copy too): a roll-up and its
 * `through` are written together, and the hours it folded are kept.
 */
export async function readUsage(
  table: Table,
  record: Pick<CustomerMeterRecord, 'id' | 'rollup'>,
  meter: MeterDefinition,
  budget: ReadBudget,
): Promise<StoredUsage> {
  const usage: StoredUsage = {
    ...(record.rollup && rollupCounts(meter, record.rollup) ? { rollup: record.rollup.state } : {}),
    hours: [],
    values: new Set(),
  };
  if (meter.aggregation.func === 'unique') {
    // Its seen values (with a roll-up that counts) and its values past them: only values count.
    // Values past the roll-up's `through` whatever its definition (the hours before it closed before
    // any redefinition since, as for the other aggregations); seen values only when it counts.
    const through = record.rollup?.through;
    const range = (condition: string, values: Record<string, string>) =>
      queryWithinBudget(
        table,
        budget,
        {
          KeyConditionExpression: `PK = :pk AND ${condition}`,
          ExpressionAttributeValues: { ':pk': `${partitions.customerMeter}${record.id}`, ...values },
          ConsistentRead: true,
        },
        { limit: USAGE_QUERY_LIMIT, maxBytes: USAGE_ITEM_MAX_BYTES },
      );
    const read = await Promise.all([
      seenCounts(meter, record.rollup)
        ? range('begins_with(SK, :seen)', { ':seen': SEEN_PREFIX })
        : Promise.resolve([]),
      range('SK >= :from', { ':from': through === undefined ? VALUE_PREFIX : `${VALUE_PREFIX}${through}#` }),
    ]);
    for (const item of read.flat()) if (ofDefinition(meter, item)) usage.values.add(String(item.value));
    return usage;
  }
  const items = await queryWithinBudget(
    table,
    budget,
    {
      KeyConditionExpression: 'PK = :pk AND SK >= :from',
      ExpressionAttributeValues: {
        ':pk': `${partitions.customerMeter}${record.id}`,
        ':from': `${HOUR_PREFIX}${record.rollup?.through ?? ''}`,
      },
      ConsistentRead: true,
    },
    { limit: USAGE_QUERY_LIMIT, maxBytes: USAGE_ITEM_MAX_BYTES },
  );
  for (const item of items) {
    if (!ofDefinition(meter, item)) continue;
    const sk = String(item.SK);
    if (sk.startsWith(HOUR_PREFIX)) usage.hours.push(hourAggregateOf(item));
    else if (sk.startsWith(VALUE_PREFIX)) usage.values.add(String(item.value));
  }
  return usage;
}

// ---------------------------------------------------------------------------------------------
// Reads of Get Customer State (shared/services/customer-state.ts)
// ---------------------------------------------------------------------------------------------

/**
 * The first `max` meters of an organization, archived ones too (its meter list's `created_at`
 * entries, which hold the whole record, oldest first), strongly consistent, within the request's
 * read budget (`ListReadTooCostly` when they do not fit), and whether more follow. A meter entry is
 * at most `ENTRY_BYTES.meterList.max` (a meter at every input limit).
 */
export async function organizationMetersWithin(
  table: Table,
  organizationId: string,
  max: number,
  budget: ReadBudget,
): Promise<{ meters: MeterRecord[]; more: boolean }> {
  // One past `max`: whether more follow.
  const items = await queryWithinBudget(
    table,
    budget,
    {
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :field)',
      ExpressionAttributeValues: {
        ':pk': listKeys.partition('meterList', organizationId),
        ':field': 'created_at#',
      },
      ConsistentRead: true,
    },
    { limit: max + 1, maxBytes: ENTRY_BYTES.meterList.max, max: max + 1 },
  );
  return { meters: items.slice(0, max).map(meterRecord), more: items.length > max };
}

// ---------------------------------------------------------------------------------------------
// Reads of Get Meter Quantities (shared/services/meter-quantities.ts)
// ---------------------------------------------------------------------------------------------

/**
 * One key range of a customer meter's partition (`lo` to `hi`, inclusive), strongly consistent,
 * within the request's read budget (`ListReadTooCostly` when it does not fit).
 */
const usageRange = (table: Table, budget: ReadBudget, customerMeterId: string, lo: string, hi: string) =>
  queryWithinBudget(
    table,
    budget,
    {
      KeyConditionExpression: 'PK = :pk AND SK BETWEEN :lo AND :hi',
      ExpressionAttributeValues: {
        ':pk': `${partitions.customerMeter}${customerMeterId}`,
        ':lo': lo,
        ':hi': hi,
      },
      ConsistentRead: true,
    },
    { limit: USAGE_QUERY_LIMIT, maxBytes: USAGE_ITEM_MAX_BYTES },
  );

/** What a customer meter stored of a window: its hour aggregates, and for `unique` its values by hour. */
export interface WindowUsage {
  hours: HourAggregate[];
  values: { hour: string; value: string }[];
}

/** A run of a window: hours (`yyyy-mm-ddThh`) read by hour, or whole days (`yyyy-mm-dd`) read by day. */
type WindowRun = { by: 'hours' | 'days'; from: string; to: string };

/**
 * The runs of the hours `from` to `to` (inclusive): the days of `days` (whole days its roll-up
 * covers, `daysWithin`) that `whole` accepts, by day; every other hour by hour. Adjacent hours are
 * one run, adjacent days too.
 */
function windowRuns(
  hours: { from: string; to: string },
  days: { from: string; to: string } | undefined,
  whole: (day: string) => boolean,
): WindowRun[] {
  if (!days) return [{ by: 'hours', ...hours }];
  const runs: WindowRun[] = [];
  // The first hour of the run of hours being gathered, and the first and last day of a day run.
  let hoursFrom: string | undefined = hours.from;
  let dayRun: { from: string; to: string } | undefined;
  for (let day = days.from; day <= days.to; day = dayAfter(day)) {
    if (whole(day)) {
      const before = `${dayBefore(day)}T23`;
      if (hoursFrom !== undefined && hoursFrom <= before)
        runs.push({ by: 'hours', from: hoursFrom, to: before });
      hoursFrom = undefined;
      dayRun = { from: dayRun?.from ?? day, to: day };
    } else {
      if (dayRun) runs.push({ by: 'days', ...dayRun });
      dayRun = undefined;
      hoursFrom ??= firstHourOf(day);
    }
  }
  if (dayRun) runs.push({ by: 'days', ...dayRun });
  hoursFrom ??= firstHourOf(dayAfter(days.to));
  if (hoursFrom <= hours.to) runs.push({ by: 'hours', from: hoursFrom, to: hours.to });
  return runs;
}

/**
 * The key ranges of a customer meter's partition that hold its aggregates of the hours `from` to
 * `to` (inclusive): the days of `days` (whole days its day aggregates cover, `daysWithin`) that
 * `whole` accepts from their day aggregates (`DAY#` runs), every other hour from its hour
 * aggregates (`HOUR#` runs). Adjacent hours are one range.
 */
export const usageRanges = (
  hours: { from: string; to: string },
  days: { from: string; to: string } | undefined,
  whole: (day: string) => boolean = () => true,
): [string, string][] =>
  windowRuns(hours, days, whole).map((run) =>
    run.by === 'days'
      ? [`${DAY_PREFIX}${run.from}`, `${DAY_PREFIX}${run.to}`]
      : [`${HOUR_PREFIX}${run.from}`, `${HOUR_PREFIX}${run.to}`],
  );

/**
 * The same runs as `usageRanges` for a `unique` meter's values: its day values (`DAYVALUE#` runs)
 * for the whole days, its values by hour (`VALUE#` runs) for every other hour.
 */
export const valueRanges = (
  hours: { from: string; to: string },
  days: { from: string; to: string } | undefined,
  whole: (day: string) => boolean = () => true,
): [string, string][] =>
  windowRuns(hours, days, whole).map((run) =>
    run.by === 'days'
      ? [`${DAY_VALUE_PREFIX}${run.from}#`, `${DAY_VALUE_PREFIX}${run.to}$`]
      : [`${VALUE_PREFIX}${run.from}#`, `${VALUE_PREFIX}${run.to}$`],
  );

/** The items of key ranges of a customer meter's partition of the meter's current definition, side by side. */
const readRanges = (
  table: Table,
  budget: ReadBudget,
  customerMeterId: string,
  meter: MeterDefinition,
  ranges: readonly [string, string][],
): Promise<Record<string, unknown>[]> =>
  Promise.all(ranges.map(([lo, hi]) => usageRange(table, budget, customerMeterId, lo, hi))).then((read) =>
    read.flat().filter((item) => ofDefinition(meter, item)),
  );

/** An hour or day aggregate as an hour aggregate (a day's under its first hour). */
const usageItemOf = (item: Record<string, unknown>): HourAggregate =>
  String(item.SK).startsWith(DAY_PREFIX) ? dayAsHour(item) : hourAggregateOf(item);

/** A value item (by hour, or a day value under its day's first hour) as a window's value. */
const windowValueOf = (item: Record<string, unknown>): { hour: string; value: string } => ({
  hour: String(item.SK).startsWith(DAY_VALUE_PREFIX) ? firstHourOf(String(item.day)) : String(item.hour),
  value: String(item.value),
});

/**
 * A customer meter's usage from hour `from` to hour `to` (inclusive, `yyyy-mm-ddThh`) by hour:
 * its hour aggregates, and for a `unique` meter its distinct-value items of those hours, strongly
 * consistent, within the request's read budget (`ListReadTooCostly` when they do not fit). With
 * the customer meter's `record`, the whole UTC days its roll-up covers and `whole` accepts (a day
 * that falls in one bucket of the caller's series) come from its day aggregates (and a `unique`
 * meter's day values), one item a day (and value), under the day's first hour (`usageRanges`,
 * `valueRanges`).
 */
export async function readUsageBetween(
  table: Table,
  customerMeterId: string,
  from: string,
  to: string,
  meter: MeterDefinition,
  budget: ReadBudget,
  days?: { record: Pick<CustomerMeterRecord, 'rollup'> | undefined; whole: (day: string) => boolean },
): Promise<WindowUsage> {
  const hours = { from, to };
  const covered = days ? daysWithin(hours, days.record?.rollup) : undefined;
  // A `unique` meter's aggregates say which buckets it has events in (one without the property
  // too); its values are items of their own.
  const unique = meter.aggregation.func === 'unique';
  const [usage, values] = await Promise.all([
    readRanges(table, budget, customerMeterId, meter, usageRanges(hours, covered, days?.whole)),
    unique
      ? readRanges(table, budget, customerMeterId, meter, valueRanges(hours, covered, days?.whole))
      : Promise.resolve([]),
  ]);
  return { hours: usage.map(usageItemOf), values: values.map(windowValueOf) };
}

// ---------------------------------------------------------------------------------------------
// Reads of a subscription's meters (shared/services/subscription-meters.ts)
// ---------------------------------------------------------------------------------------------

/**
 * The meters a page's metered prices name and the customer meters its windows read, in one read by
 * key (strongly consistent, at most 100 per BatchGetItem, within `budget`, each item reserved at a
 * meter at every input limit): the meters by id, and the customer meters that exist (their
 * roll-ups say which days their day aggregates cover), by id.
 */
export async function readMetersAndCustomerMetersWithin(
  table: Table,
  meterIds: readonly string[],
  customerMeterIds: readonly string[],
  budget: ReadBudget,
): Promise<{ meters: Map<string, MeterRecord>; customerMeters: Map<string, CustomerMeterRecord> }> {
  const found = await readKeysWithinBudget(
    table,
    [
      ...[...new Set(meterIds)].map((id) => keys.meter(id)),
      ...[...new Set(customerMeterIds)].map((id) => keys.customerMeter(id)),
    ],
    ENTRY_BYTES.meterList.max,
    budget,
  );
  const meters = new Map<string, MeterRecord>();
  const customerMeters = new Map<string, CustomerMeterRecord>();
  for (const item of found.values()) {
    if (String(item.PK).startsWith(partitions.customerMeter)) {
      const customerMeter = customerMeterRecord(item);
      customerMeters.set(customerMeter.id, customerMeter);
    } else {
      const meter = meterRecord(item);
      meters.set(meter.id, meter);
    }
  }
  return { meters, customerMeters };
}

/**
 * The whole UTC days within the hours `from` to `to` (inclusive) whose day aggregates hold their
 * usage (`coveredDays` of the roll-up), or none.
 */
export function daysWithin(
  hours: { from: string; to: string },
  rollup: UsageRollup | undefined,
): { from: string; to: string } | undefined {
  const covered = coveredDays(rollup);
  if (!covered) return undefined;
  const firstWhole = hours.from.endsWith('T00') ? dayOfHour(hours.from) : dayAfter(dayOfHour(hours.from));
  const lastWhole = hours.to.endsWith('T23') ? dayOfHour(hours.to) : dayBefore(dayOfHour(hours.to));
  const from = firstWhole > covered.from ? firstWhole : covered.from;
  const to = lastWhole < covered.to ? lastWhole : covered.to;
  return from <= to ? { from, to } : undefined;
}

/**
 * What a customer meter stored of its usage in the hours `from` to `to` (inclusive, `yyyy-mm-ddThh`):
 * its hour aggregates, or for a `unique` meter its distinct values of those hours. The whole days
 * its roll-up's day aggregates cover (`daysWithin`, from the customer meter's item: `record`) come
 * from those, one item a day, and the hours before and after them from hour aggregates (as
 * `HourAggregate`s: a day's under its first hour). Strongly consistent Queries of at most three key
 * ranges of its partition, side by side, within `budget` (`ListReadTooCostly` when they do not fit).
 */
export async function readPeriodUsage(
  table: Table,
  customerMeterId: string,
  hours: { from: string; to: string },
  meter: MeterDefinition,
  budget: ReadBudget,
  record?: Pick<CustomerMeterRecord, 'rollup'>,
): Promise<StoredUsage> {
  const unique = meter.aggregation.func === 'unique';
  const covered = daysWithin(hours, record?.rollup);
  const ranges = unique ? valueRanges(hours, covered) : usageRanges(hours, covered);
  const items = await readRanges(table, budget, customerMeterId, meter, ranges);
  return unique
    ? { hours: [], values: new Set(items.map((item) => String(item.value))) }
    : { hours: items.map(usageItemOf), values: new Set() };
}

/** IAM (shared/data/grants.ts). */
export const access = {
  /** The organization's meters, from its meter list's entries. */
  organizationMeters: [{ actions: ['dynamodb:Query'], leadingKeys: ['meterList'] }],
  /** The same entries, within a read budget (Get Customer State). */
  organizationMetersWithin: [{ actions: ['dynamodb:Query'], leadingKeys: ['meterList'] }],
  /** The external-id guards, in the organization's partition. */
  customersByExternalId: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customerExternalId', 'organization'] },
  ],
  /** A batch's aggregates and customer meters read at once; one read again after a lost condition. */
  readAggregates: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customerMeter'] }],
  /** The aggregate's conditional put, the values' and the customer meter's puts (its roll-up's, day aggregates', seen and day values' too). */
  writeAggregates: [{ actions: ['dynamodb:PutItem'], leadingKeys: ['customerMeter'] }],
  /** The closed hours (and a `unique` meter's values) a roll-up folds. */
  readClosedHours: [{ actions: ['dynamodb:Query'], leadingKeys: ['customerMeter'] }],
  /** Get Customer Meter's read of the customer meter's own item. */
  getCustomerMeter: [{ actions: ['dynamodb:GetItem'], leadingKeys: ['customerMeter'] }],
  /** Get Customer Meter's read of its customer and its meter, in one batch. */
  readOwners: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer', 'meter'] }],
  /** The customer meters a customer filter names, by key. */
  readCustomerMeters: [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customerMeter'] }],
  /** An organization's customer meters (index `GSI1`; `indexNames.gsi1` written out, see usage-events.ts). */
  listCustomerMeterEntries: [
    { actions: ['dynamodb:Query'], leadingKeys: ['customerMeterList'], indexes: ['GSI1'] },
  ],
  /** A customer meter's hour aggregates and distinct values. */
  readUsage: [{ actions: ['dynamodb:Query'], leadingKeys: ['customerMeter'] }],
  /** Get Meter Quantities: a customer meter's hour and day aggregates and distinct values (by hour, by day) of a window. */
  readUsageBetween: [{ actions: ['dynamodb:Query'], leadingKeys: ['customerMeter'] }],
  /** The meters a page's metered prices name, and the customer meters it reads (their roll-ups). */
  readMetersAndCustomerMetersWithin: [
    { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['meter', 'customerMeter'] },
  ],
  /** A customer meter's usage in the hours of a subscription's period: day and hour aggregates, or day values and values. */
  readPeriodUsage: [{ actions: ['dynamodb:Query'], leadingKeys: ['customerMeter'] }],
} as const satisfies DataAccess;
