/**
 * The meter aggregator: usage events, as the table's stream delivers them, folded into customer
 * meters (`shared/data/customer-meters.ts`). Its own function and event source mapping
 * (`functions/meter-aggregator`, infra/usage.ts), never the webhook relay's: ingest volume must
 * not delay webhooks.
 *
 * **Each distinct event once.** A stored event is one `INSERT` record of `UEVENT#<id>` (a duplicate
 * writes nothing, so makes no record; ingest never modifies an event). A batch's events are matched
 * against their organization's meters (read once per organization and batch) and grouped by
 * aggregate: (customer, meter, hour of arrival). Each aggregate is then written with **one**
 * conditional PutItem holding the new fold and, for the batch's stream shard, the highest sequence
 * number folded in; a record whose sequence is not above the one recorded for its shard is skipped.
 * So a batch retried whole, bisected, or replayed changes nothing it already applied; a consumer that
 * fails after some aggregate writes and before others finds the written ones applied on the retry; a
 * write that succeeded but whose answer was lost (the SDK retries it, or the batch is retried) finds
 * its own version moved on, reads again and finds its sequence applied. Two consumers on different
 * shards writing one aggregate: one condition fails, that one reads again and folds again.
 *
 * **Periods.** An event counts in the hour it *arrives* in (`ingested_at`), whatever its
 * `timestamp`: a late event never reopens a closed period. A period is a range of whole hours, summed
 * on read.
 *
 * **Meters.** A meter counts the events that arrive while it is live: `created_at` ≤ `ingested_at`
 * and, once archived, `ingested_at` < `archived_at` (an event that arrived before the archive is
 * counted even when the consumer gets to it later), and never in a past archive (`archived_periods`:
 * an event that arrived while the meter was archived stays uncounted after an unarchive, as the
 * hosted service, which never counts it, whenever the consumer reaches it). An event names its customer by id, or by
 * external id (resolved through the organization's external-id guard when the batch runs; an
 * external id no customer has is counted for no customer meter).
 *
 * **The customers' states.** After its writes, the batch writes the `customer.state_changed` event
 * of each customer whose customer meters it counted events for, one per customer, when the
 * organization listens (`shared/webhooks/customer-state-events.ts`).
 *
 * **Unique.** A `unique` meter's distinct values are items of their own (one put per value and hour,
 * idempotent), written before the hour's aggregate; the count is the number of distinct values over
 * the period's items.
 *
 * **Roll-ups.** Last, each customer meter the batch counted for whose closed hours are due
 * (`rollupDue`: a day of them closed since its last roll-up) has them folded into its roll-up
 * (`shared/data/customer-meters.ts`, "Roll-up"): at most `ROLLUP_MAX_HOURS` per batch, one Query
 * and one conditional put; a roll-up another consumer wrote first stands. A `unique` meter's
 * distinct values of those hours become its seen values ("Unique roll-up"). So an all-time read folds
 * the roll-up and about three days of hours, however long the customer has been counted.
 */

import { keyId } from '../data/catalog.ts';
import {
  AggregateChanged,
  type CustomerMeterRecord,
  customerMeterId,
  customerMeterRecord,
  access as customerMetersAccess,
  customersByExternalId,
  type DayAggregate,
  dayAfter,
  dayBefore,
  dayOfHour,
  firstHourOf,
  getHourAggregate,
  type HourAggregate,
  hourAggregateOf,
  hourKey,
  hourOf,
  hourStart,
  ofDefinition,
  organizationMeters,
  putCustomerMeter,
  putDayValues,
  putSeenValues,
  putUniqueValue,
  ROLLUP_MAX_HOURS,
  readAggregates,
  readClosedHours,
  readClosedValues,
  rollupCounts,
  rollupDue,
  seenCounts,
  writeDayAggregates,
  writeHourAggregate,
  writeRollup,
} from '../data/customer-meters.ts';
import { orderedSequence, type Table } from '../data/dynamo.ts';
import type { FunctionAccess } from '../data/grants.ts';
import type { MeterRecord } from '../data/meters.ts';
import { type Key, keys, partitions } from '../data/table.ts';
import type { UsageEventRecord } from '../data/usage-events.ts';
import {
  emptyState,
  type FoldState,
  foldEvent,
  type MeterEvent,
  matches,
  mergeStates,
  uniqueKey,
} from '../domain/meter.ts';
import {
  endpointsReader,
  type StateChange,
  stateChangesAccess,
  writeStateChanges,
} from '../webhooks/customer-state-events.ts';

/** The stream records the aggregator takes (its event source mapping's filter, and the local poller's). */
export const aggregatorStreamFilter = {
  eventName: 'INSERT',
  partitionKeyPrefix: partitions.usageEvent,
} as const;

/** Whether a stream record is one the aggregator takes (`aggregatorStreamFilter`). */
export function isAggregatorRecord(record: {
  eventName?: string;
  dynamodb?: { Keys?: Record<string, { S?: string } | undefined> };
}): boolean {
  const pk = record.dynamodb?.Keys?.PK?.S ?? '';
  return (
    record.eventName === aggregatorStreamFilter.eventName &&
    pk.startsWith(aggregatorStreamFilter.partitionKeyPrefix)
  );
}

export interface StreamedEvent {
  /** The record's stream sequence number. */
  sequence: string;
  event: UsageEventRecord;
}

export interface AggregatorDependencies {
  table: Table;
  now: () => Date;
  /** Hour aggregates one roll-up folds at most (`ROLLUP_MAX_HOURS`; smaller in tests). */
  rollupMaxHours?: number;
}

/** Aggregates written at once. */
const WIDTH = 16;
/** An aggregate changed between its read and its write this many times: the batch fails (and is retried). */
const ATTEMPTS = 8;

/** What a meter reads of a stored event. */
export const meterEventOf = (event: UsageEventRecord): MeterEvent => ({
  name: event.name,
  source: 'user',
  timestamp: new Date(Math.floor(event.timestamp_us / 1000)).toISOString(),
  metadata: JSON.parse(event.metadata) as Record<string, unknown>,
});

/** Whether a meter counts an event that arrived at `ingestedAt` (see above). */
export function meterCounts(meter: MeterRecord, ingestedAt: string): boolean {
  const at = Date.parse(ingestedAt);
  return (
    Date.parse(meter.created_at) <= at &&
    (meter.archived_at === null || at < Date.parse(meter.archived_at)) &&
    !meter.archived_periods.some(({ from, to }) => Date.parse(from) <= at && at < Date.parse(to))
  );
}

interface Pending {
  meter: MeterRecord;
  customerId: string;
  customerMeterId: string;
  hour: string;
  /** The aggregate's records, in stream order. */
  records: { sequence: string; event: MeterEvent }[];
}

export interface AggregationResult {
  /** Aggregates written by this run. */
  written: number;
  /** Aggregates whose records were all applied already (a retry, a replay). */
  skipped: number;
}

/**
 * Folds one stream batch (one shard's records, in stream order) into its aggregates (see above).
 * Throws when anything failed, so that the whole batch is retried: every write is idempotent.
 */
export async function aggregateEvents(
  deps: AggregatorDependencies,
  shardId: string,
  streamed: readonly StreamedEvent[],
): Promise<AggregationResult> {
  const byOrganization = new Map<string, StreamedEvent[]>();
  for (const s of streamed) {
    const list = byOrganization.get(s.event.organization_id) ?? [];
    list.push(s);
    byOrganization.set(s.event.organization_id, list);
  }
  const pending = new Map<string, Pending>();
  /** The customers whose customer meters this batch folds events into (`customer.state_changed`). */
  const changes: StateChange[] = [];
  for (const [organizationId, events] of byOrganization) {
    const meters = await organizationMeters(deps.table, organizationId);
    if (meters.length === 0) continue;
    const external = events.flatMap((s) =>
      s.event.customer_id === null && s.event.external_customer_id !== null
        ? [s.event.external_customer_id]
        : [],
    );
    const byExternal =
      external.length > 0 ? await customersByExternalId(deps.table, organizationId, external) : new Map();
    for (const { sequence, event } of events) {
      const customerId =
        event.customer_id ??
        (event.external_customer_id ? byExternal.get(event.external_customer_id) : undefined);
      if (!customerId) continue;
      const meterEvent = meterEventOf(event);
      const hour = hourOf(event.ingested_at);
      for (const meter of meters) {
        if (!meterCounts(meter, event.ingested_at) || !matches(meter.filter, meterEvent)) continue;
        changes.push({ organizationId, customerId, sequence, at: event.ingested_at, correlationId: null });
        const id = customerMeterId(customerId, meter.id);
        const key = `${id}#${hour}`;
        let entry = pending.get(key);
        if (!entry) {
          entry = { meter, customerId, customerMeterId: id, hour, records: [] };
          pending.set(key, entry);
        }
        entry.records.push({ sequence: orderedSequence(sequence), event: meterEvent });
      }
    }
  }
  if (pending.size === 0) return { written: 0, skipped: 0 };

  const entries = [...pending.values()];
  const found = await readAggregates(deps.table, [
    ...entries.map((e) => hourKey(e.customerMeterId, e.hour)),
    ...[...new Set(entries.map((e) => e.customerMeterId))].map((id) => keys.customerMeter(id)),
  ]);
  const stored = (key: Key) => found.get(keyId(key));
  const now = deps.now().toISOString();
  let written = 0;
  let skipped = 0;
  for (let i = 0; i < entries.length; i += WIDTH) {
    await Promise.all(
      entries.slice(i, i + WIDTH).map(async (entry) => {
        const item = stored(hourKey(entry.customerMeterId, entry.hour));
        const outcome = await applyAggregate(
          deps.table,
          shardId,
          entry,
          item ? hourAggregateOf(item) : undefined,
          now,
        );
        if (outcome === 'written') written++;
        else skipped++;
      }),
    );
  }
  // The customer meters first counted by this batch (after their aggregates: a customer meter is
  // listed once it has something to show; a failure here is repaired by the retry).
  const created = new Map<string, Pending>();
  for (const entry of entries) {
    if (!stored(keys.customerMeter(entry.customerMeterId))) created.set(entry.customerMeterId, entry);
  }
  await Promise.all(
    [...created.values()].map((entry) =>
      putCustomerMeter(deps.table, {
        id: entry.customerMeterId,
        organization_id: entry.meter.organization_id,
        customer_id: entry.customerId,
        meter_id: entry.meter.id,
        created_at: now,
      }),
    ),
  );
  // Then each changed customer's state, after every write of the batch (written or, on a retry,
  // found applied: the run that applied them may have stopped before this).
  await writeStateChanges(deps.table, endpointsReader(deps.table), changes, deps.now());
  // Last, the roll-ups due of the customer meters it counted for (one that it created has no closed
  // hours yet).
  const due = new Map<string, { record: CustomerMeterRecord; meter: MeterRecord; before: string }>();
  for (const entry of entries) {
    const item = stored(keys.customerMeter(entry.customerMeterId));
    if (!item || due.has(entry.customerMeterId)) continue;
    const record = customerMeterRecord(item);
    const before = rollupDue(record, deps.now());
    if (before) due.set(entry.customerMeterId, { record, meter: entry.meter, before });
  }
  const rollups = [...due.values()];
  for (let i = 0; i < rollups.length; i += WIDTH) {
    await Promise.all(
      rollups
        .slice(i, i + WIDTH)
        .map((r) =>
          r.meter.aggregation.func === 'unique'
            ? rollUpUnique(deps.table, r.record, r.meter, r.before, now, deps.rollupMaxHours)
            : rollUp(deps.table, r.record, r.meter, r.before, now, deps.rollupMaxHours),
        ),
    );
  }
  return { written, skipped };
}

/** The customer meter's owner fields, as its items carry them. */
const ownerOf = (record: CustomerMeterRecord) => ({
  organization_id: record.organization_id,
  customer_id: record.customer_id,
  meter_id: record.meter_id,
});

/**
 * The hours of the day a customer meter's roll-up `through` falls in that are before it (at most
 * 23, folded by its previous step): read again so that the day's aggregate is whole.
 */
const readLeadHours = async (
  table: Table,
  record: CustomerMeterRecord,
): Promise<Record<string, unknown>[]> => {
  const through = record.rollup?.through;
  if (through === undefined || through.endsWith('T00')) return [];
  const hourBefore = hourOf(new Date(hourStart(through) - 3_600_000).toISOString());
  return (await readClosedHours(table, record.id, firstHourOf(dayOfHour(through)), hourBefore, 24)).items;
};

/**
 * The day aggregates of the hour aggregates a roll-up step read (`items`, the lead's too) of the
 * meter's current definition: one per day from `daysFrom` that ends by `through` (whole: the step
 * read all its hours, and none from `through` on counts).
 */
function dayAggregatesOf(
  record: CustomerMeterRecord,
  meter: MeterRecord,
  items: readonly Record<string, unknown>[],
  daysFrom: string,
  through: string,
  now: string,
): DayAggregate[] {
  const lastWholeDay = dayBefore(dayOfHour(through));
  const days = new Map<string, DayAggregate>();
  for (const item of items) {
    const day = dayOfHour(String(item.hour));
    if (!ofDefinition(meter, item) || day < daysFrom || day > lastWholeDay) continue;
    const hour = hourAggregateOf(item);
    const known = days.get(day);
    days.set(day, {
      customer_meter_id: record.id,
      day,
      state: known ? mergeStates(known.state, hour.state) : hour.state,
      definition_version: meter.definition_version,
      hours: (known?.hours ?? 0) + 1,
      updated_at: now,
    });
  }
  return [...days.values()];
}

/**
 * Folds a customer meter's closed hours before `before` (those past its roll-up, at most
 * `ROLLUP_MAX_HOURS`) into its roll-up, under the meter's current definition: a roll-up of another
 * definition is started afresh (its hours are that definition's, which no read counts).
 */
async function rollUp(
  table: Table,
  record: CustomerMeterRecord,
  meter: MeterRecord,
  before: string,
  now: string,
  max = ROLLUP_MAX_HOURS,
): Promise<void> {
  const last = hourOf(new Date(hourStart(before) - 3_600_000).toISOString());
  const previous = record.rollup;
  // The day `through` falls in began before it: its earlier hours (folded last time) are read again
  // for that day's aggregate.
  const dayBegan = previous ? firstHourOf(dayOfHour(previous.through)) : undefined;
  const [lead, { items, complete }] = await Promise.all([
    readLeadHours(table, record),
    readClosedHours(table, record.id, previous?.through, last, max),
  ]);
  const kept = previous && rollupCounts(meter, previous) ? previous : undefined;
  let state = kept?.state ?? emptyState(meter.aggregation);
  let hours = kept?.hours ?? 0;
  for (const item of items) {
    if (!ofDefinition(meter, item)) continue;
    state = mergeStates(state, hourAggregateOf(item).state);
    hours++;
  }
  const lastRead = items.at(-1);
  // Stopped short of `before`: through the hour after the last one read.
  const through =
    complete || lastRead === undefined
      ? before
      : hourOf(new Date(hourStart(String(lastRead.hour)) + 3_600_000).toISOString());
  // Every hour from `dayBegan` (from the first, on a first roll-up) up to `through` was read: each
  // day among them that ends by `through` is whole, and gets its day aggregate.
  const daysFrom = previous?.days_from ?? (dayBegan === undefined ? '' : dayOfHour(dayBegan));
  await writeDayAggregates(
    table,
    ownerOf(record),
    dayAggregatesOf(record, meter, [...lead, ...items], daysFrom, through, now),
  );
  await writeRollup(
    table,
    record,
    {
      through,
      state,
      definition_version: meter.definition_version,
      hours,
      days_from: daysFrom,
      updated_at: now,
    },
    previous?.through,
  );
}

/**
 * A `unique` customer meter's roll-up: the distinct values of its closed hours before `before` (those
 * past its roll-up: at most `max` hours and about `max` value items) put as its seen values and,
 * by the day of their hour, as its day values, then its roll-up moved on to the first hour not read
 * (`shared/data/customer-meters.ts`, "Unique roll-up"); with its whole days' aggregates (which say
 * that a day has events, with or without the property). A roll-up of another definition starts
 * afresh: the seen values of that definition count for nothing, and none of this one's are before
 * its `through` (a redefinition restarts the counts, and those hours were closed before it).
 */
async function rollUpUnique(
  table: Table,
  record: CustomerMeterRecord,
  meter: MeterRecord,
  before: string,
  now: string,
  max = ROLLUP_MAX_HOURS,
): Promise<void> {
  const last = hourOf(new Date(hourStart(before) - 3_600_000).toISOString());
  const previous = record.rollup;
  const [lead, hours, values] = await Promise.all([
    readLeadHours(table, record),
    readClosedHours(table, record.id, previous?.through, last, max),
    readClosedValues(table, record.id, previous?.through, last, max),
  ]);
  const lastHour = hours.items.at(-1);
  const throughHours =
    hours.complete || lastHour === undefined
      ? before
      : hourOf(new Date(hourStart(String(lastHour.hour)) + 3_600_000).toISOString());
  const through =
    values.through !== undefined && values.through < throughHours ? values.through : throughHours;
  // Day values are put by every step for the hours it reads (a day's are the union of its steps'),
  // so each day from the first the steps read whole has all of them. A roll-up written before day
  // values read the first hours of its `through`'s day without putting them: its days start at the
  // next day (`previous.through` at midnight: its own).
  const daysFrom =
    previous === undefined
      ? ''
      : (previous.days_from ??
        (previous.through.endsWith('T00')
          ? dayOfHour(previous.through)
          : dayAfter(dayOfHour(previous.through))));
  const seen = new Set<string>();
  const dayValues = new Map<string, { day: string; value: string }>();
  for (const item of values.items) {
    const hour = String(item.hour);
    if (!ofDefinition(meter, item) || hour >= through) continue;
    const value = String(item.value);
    seen.add(value);
    const day = dayOfHour(hour);
    if (day >= daysFrom) dayValues.set(`${day}\u0000${value}`, { day, value });
  }
  const folded = hours.items.filter((item) => ofDefinition(meter, item) && String(item.hour) < through);
  await Promise.all([
    putSeenValues(table, ownerOf(record), record.id, [...seen], meter.definition_version),
    putDayValues(table, record.id, [...dayValues.values()], meter.definition_version),
    writeDayAggregates(
      table,
      ownerOf(record),
      dayAggregatesOf(record, meter, [...lead, ...folded], daysFrom, through, now),
    ),
  ]);
  const kept = seenCounts(meter, previous) ? previous.hours : 0;
  await writeRollup(
    table,
    record,
    {
      through,
      state: emptyState(meter.aggregation),
      definition_version: meter.definition_version,
      hours: kept + folded.length,
      days_from: daysFrom,
      updated_at: now,
    },
    previous?.through,
  );
}

/** The meter's definition changed after this batch read it: the batch fails (and is retried). */
export class DefinitionChanged extends Error {
  constructor(meterId: string) {
    super(`meter ${meterId} was redefined while its events were folded`);
    this.name = 'DefinitionChanged';
  }
}

/** One aggregate: the records not applied yet folded in, with one conditional write; read again on a lost condition. */
async function applyAggregate(
  table: Table,
  shardId: string,
  entry: Pending,
  read: HourAggregate | undefined,
  now: string,
): Promise<'written' | 'skipped'> {
  let current = read;
  const definition = entry.meter.definition_version;
  for (let attempt = 1; ; attempt++) {
    if (current && current.definition_version > definition) {
      // Folded under a newer definition than the meter this batch read (changed meanwhile): the batch
      // is retried, and reads the meter again.
      throw new DefinitionChanged(entry.meter.id);
    }
    // An hour of an older definition (or, written before definition versions, of another
    // aggregation) starts afresh: its state is not this definition's. Its applied sequences stay:
    // what it folded is not folded again.
    const base =
      current &&
      current.definition_version === definition &&
      current.state.func === entry.meter.aggregation.func
        ? current.state
        : undefined;
    const applied = current?.applied[shardId];
    const fresh = applied === undefined ? entry.records : entry.records.filter((r) => r.sequence > applied);
    if (fresh.length === 0) return 'skipped';
    const aggregation = entry.meter.aggregation;
    let delta: FoldState = emptyState(aggregation);
    if (aggregation.func === 'unique') {
      // The values in items of their own first (idempotent), then the aggregate that records them applied.
      const values = [...new Set(fresh.flatMap((r) => uniqueKey(r.event, aggregation.property) ?? []))];
      for (let i = 0; i < values.length; i += WIDTH) {
        await Promise.all(
          values
            .slice(i, i + WIDTH)
            .map((value) => putUniqueValue(table, entry.customerMeterId, entry.hour, value, definition)),
        );
      }
    } else {
      for (const record of fresh) delta = foldEvent(aggregation, delta, record.event);
    }
    const highest = fresh.reduce((max, r) => (r.sequence > max ? r.sequence : max), fresh[0]?.sequence ?? '');
    const next: HourAggregate = {
      customer_meter_id: entry.customerMeterId,
      hour: entry.hour,
      state: base ? mergeStates(base, delta) : delta,
      applied: { ...(current?.applied ?? {}), [shardId]: highest },
      definition_version: definition,
      version: (current?.version ?? 0) + 1,
      updated_at: now,
    };
    try {
      await writeHourAggregate(
        table,
        {
          organization_id: entry.meter.organization_id,
          customer_id: entry.customerId,
          meter_id: entry.meter.id,
        },
        next,
        current?.version,
      );
      return 'written';
    } catch (error) {
      if (!(error instanceof AggregateChanged) || attempt >= ATTEMPTS) throw error;
      current = await getHourAggregate(table, hourKey(entry.customerMeterId, entry.hour));
    }
  }
}

/** What this function may do (shared/data/grants.ts), keyed by its name. */
export const functionAccess = (): Readonly<Record<string, FunctionAccess>> => ({
  'meter-aggregator': {
    table: [
      ...customerMetersAccess.organizationMeters,
      ...customerMetersAccess.customersByExternalId,
      ...customerMetersAccess.readAggregates,
      ...customerMetersAccess.writeAggregates,
      // The roll-ups' Query of closed hours (`customerMetersAccess.readClosedHours`) is the same
      // statement as the customers' states' usage reads (Query, `customerMeter`), granted by them;
      // the IAM scenario's roll-up step fails if it goes.
      ...stateChangesAccess(),
    ],
  },
});
