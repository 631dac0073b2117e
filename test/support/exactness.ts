/**
 * The exactness property of issue 28 on DynamoDB Local: events ingested through the real ingest
 * service (under its function's policy, with a clock that advances per batch so arrivals span many
 * hours), read back from the table's real stream, and folded by the real consumer (under its policy)
 * as Lambda's mapping drives it — with everything the issue names going wrong — then compared with
 * a plain fold of the distinct events (the domain's `foldEvent`) for every customer, meter and hour.
 *
 * What goes wrong, all from one seeded PRNG (a failure names its seed):
 * - client side: 10 % of each batch repeats an `external_id` of an earlier batch; some whole batches
 *   are sent again; timestamps are late (up to three days before arrival) and out of order;
 * - stream side: the records of the real stream are split by event id into `shards` shards (each in
 *   stream order, as a shard is), driven concurrently (so two consumers race on one aggregate);
 *   batches already applied are delivered again, older ones too (replays, out of order);
 * - consumer side: an invocation fails part-way, at a chosen aggregate write, either before it is
 *   sent or after it succeeded with its answer lost; Lambda then bisects the batch and retries.
 */
import { randomUUID } from 'node:crypto';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { streamedEvents } from '#functions/meter-aggregator/handler.ts';
import {
  addMember,
  createCustomer,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { enableTableStream, openStreamReader, type StreamRecord } from '#scripts/local/stream-reader.ts';
import {
  customerMeterId,
  DAY_PREFIX,
  DAY_VALUE_PREFIX,
  getCustomerMeter,
  HOUR_PREFIX,
  hourAggregateOf,
  hourOf,
  readPeriodUsage,
  readUsageBetween,
  SEEN_PREFIX,
  VALUE_PREFIX,
} from '#shared/data/customer-meters.ts';
import { queryAll, type Table } from '#shared/data/dynamo.ts';
import { ReadBudget } from '#shared/data/listing.ts';
import { insertMeter, type MeterRecord } from '#shared/data/meters.ts';
import { partitions } from '#shared/data/table.ts';
import type { UsageEventRecord } from '#shared/data/usage-events.ts';
import {
  emptyState,
  type FoldState,
  foldEvent,
  matches,
  mergeStates,
  quantityOf,
} from '#shared/domain/meter.ts';
import type { UserPrincipal } from '#shared/domain/principals.ts';
import { totalsOf } from '#shared/services/customer-meters.ts';
import {
  aggregateEvents,
  meterCounts,
  meterEventOf,
  type StreamedEvent,
} from '#shared/services/meter-aggregation.ts';
import { ingestEvents } from '#shared/services/usage-events.ts';
import { dynamodbEndpoint, LOCAL_REGION } from './dynamodb.ts';
import { EXACTNESS_METERS } from './exactness-meters.ts';
import type { World } from './world.ts';

export { EXACTNESS_METERS };

export interface ExactnessOptions {
  seed: number;
  /** Distinct events stored. */
  events: number;
  customers: number;
  /** Events per Ingest Events request. */
  ingestBatch: number;
  /** Records per consumer batch (the mapping's batch size). */
  consumerBatch: number;
  /** Synthetic stream shards driven concurrently. */
  shards: number;
  /** Share of invocations that fail part-way. */
  faultRate: number;
  /** Share of successful batches delivered again (and as often an older one). */
  replayRate: number;
  /** Share of ingest batches sent again whole. */
  retriedBatchRate: number;
  /** Ingest batches sent at once (default 1). */
  parallel?: number;
  /** Minutes the clock advances per ingest batch (arrivals over many hours). */
  minutesPerBatch: number;
  /** Distinct values of the `unique` meter's property. */
  models: number;
  /**
   * The consumer's clock: the real one (default), or `arrival`: a minute after the latest arrival
   * among the records it was given so far, as a consumer that keeps up with its stream, so that
   * hours close and roll up (days of arrivals in one run). One shard only: shards driven apart in
   * simulated time would deliver records into hours another shard's clock has closed, which a
   * stream (24 h of retention) never does.
   */
  consumerClock?: 'arrival';
  /**
   * The table without the IAM proxy (the long run: the proxy's HTTP hop per call would make it
   * last an hour); the fast run keeps each function under its policy.
   */
  direct?: true;
}

/** A deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface SentEvent {
  name: string;
  external_id: string;
  timestamp: string;
  customer_id?: string;
  external_customer_id?: string;
  metadata: Record<string, unknown>;
}

export interface ExactnessSetup {
  organizationId: string;
  customers: { id: string; externalId: string }[];
  meters: MeterRecord[];
}

/** A fresh organization, its customers (each with an external id) and the six meters, live before the first arrival. */
export async function exactnessSetup(
  world: World,
  options: ExactnessOptions,
  start: Date,
): Promise<ExactnessSetup> {
  const organization = await createOrganization(world.admin, {
    name: `Exactness ${randomUUID().slice(0, 8)}`,
  });
  const customers: { id: string; externalId: string }[] = [];
  for (let i = 0; i < options.customers; i++) {
    const externalId = `ext-${i}-${randomUUID().slice(0, 8)}`;
    const customer = await createCustomer(world.admin, {
      organizationId: organization.id,
      email: `exact-${i}-${randomUUID().slice(0, 8)}@x.example`,
      externalId,
    });
    customers.push({ id: customer.id, externalId });
  }
  const created = new Date(start.getTime() - 3_600_000).toISOString();
  const meters: MeterRecord[] = [];
  for (const definition of EXACTNESS_METERS) {
    const meter: MeterRecord = {
      id: randomUUID(),
      organization_id: organization.id,
      name: definition.name,
      unit: 'scalar',
      custom_label: null,
      custom_multiplier: null,
      filter: definition.filter,
      aggregation: definition.aggregation,
      metadata: {},
      created_at: created,
      modified_at: null,
      archived_at: null,
      archived_periods: [],
      last_billed_event_id: null,
      definition_version: 1,
      version: 1,
    };
    await insertMeter(world.table, meter);
    meters.push(meter);
  }
  return { organizationId: organization.id, customers, meters };
}

/** One event, of varied names, customers (by id or external id) and metadata (numbers exact and not, wrong types). */
function makeEvent(
  random: () => number,
  setup: ExactnessSetup,
  options: ExactnessOptions,
  index: number,
  arrival: Date,
): SentEvent {
  const customer = setup.customers[Math.floor(random() * setup.customers.length)] as {
    id: string;
    externalId: string;
  };
  const r = random();
  const name = r < 0.7 ? 'api.call' : r < 0.85 ? 'nightly.batch' : 'login';
  const metadata: Record<string, unknown> = {};
  const t = random();
  // Integers, binary fractions and decimal fractions (0.1 is not a binary fraction: a float sum drifts).
  if (t < 0.85)
    metadata.tokens =
      t < 0.4
        ? Math.floor(random() * 1000)
        : t < 0.6
          ? Math.floor(random() * 64) / 8
          : Math.floor(random() * 1000) / 10;
  else if (t < 0.9) metadata.tokens = 'many'; // a wrong type: left out of numeric aggregations
  if (random() < 0.9) metadata.latency = Math.round(random() * 5000) / 100;
  if (random() < 0.8) metadata.model = `m${Math.floor(random() * options.models)}`;
  metadata.region = random() < 0.2 ? 'eu' : 'us';
  // Late (up to three days before arrival) and out of order.
  const timestamp = new Date(arrival.getTime() - Math.floor(random() * 3 * 86_400_000)).toISOString();
  return {
    name,
    external_id: `x-${setup.organizationId.slice(0, 8)}-${index}`,
    timestamp,
    ...(random() < 0.3 ? { external_customer_id: customer.externalId } : { customer_id: customer.id }),
    metadata,
  };
}

export interface IngestOutcome {
  /** The distinct events as stored: the first send of each external id, with its arrival. */
  distinct: Map<string, { event: SentEvent; ingestedAt: string; customerId: string }>;
  duplicatesAnswered: number;
  duplicatesInjected: number;
  batches: number;
}

/** Ingests the events through the service, batch by batch, the clock advancing per batch. */
export async function ingestAll(
  world: World,
  setup: ExactnessSetup,
  options: ExactnessOptions,
  start: Date,
): Promise<IngestOutcome> {
  const random = prng(options.seed);
  const principal: UserPrincipal = {
    kind: 'user',
    userId: 'exactness',
    tokenId: 'exactness',
    organizationIds: [setup.organizationId],
    scopes: new Set(['events:write']),
  };
  const functionDeps = world.depsFor('ingest-events');
  const depsAt = (clock: Date) => ({
    ...functionDeps,
    table: options.direct ? world.table : functionDeps.table,
    now: () => clock,
  });
  const byExternal = new Map(setup.customers.map((c) => [c.externalId, c.id]));
  const distinct = new Map<string, { event: SentEvent; ingestedAt: string; customerId: string }>();
  const sentBefore: SentEvent[] = [];
  let duplicatesAnswered = 0;
  let duplicatesInjected = 0;
  let batches = 0;
  let next = 0;
  let index = 0;
  while (next < options.events) {
    // A group of batches sent at once (several clients); each repeats only external ids of the
    // groups before it, whose events are stored: so which send stored an event is known.
    const group: { batch: SentEvent[]; fresh: SentEvent[]; clock: Date; again: boolean }[] = [];
    for (let g = 0; g < (options.parallel ?? 1) && next < options.events; g++, index++) {
      const clock = new Date(start.getTime() + index * options.minutesPerBatch * 60_000);
      const fresh: SentEvent[] = [];
      const size = Math.min(options.ingestBatch, options.events - next);
      const repeats = sentBefore.length > 0 ? Math.floor(size * 0.1) : 0;
      for (let i = 0; i < size - repeats; i++) fresh.push(makeEvent(random, setup, options, next++, clock));
      // Repeats of earlier batches' external ids (a client that retried events it had sent).
      const repeated = Array.from(
        { length: repeats },
        () => sentBefore[Math.floor(random() * sentBefore.length)] as SentEvent,
      );
      duplicatesInjected += repeats;
      const batch = [...fresh, ...repeated].sort(() => random() - 0.5);
      group.push({ batch, fresh, clock, again: random() < options.retriedBatchRate });
    }
    await Promise.all(
      group.map(async ({ batch, clock, again }) => {
        const answer = await ingestEvents(depsAt(clock), principal, { events: batch } as never);
        batches++;
        duplicatesAnswered += answer.duplicates;
        if (again) {
          // The whole batch sent again (its answer lost on the client's side): every event a duplicate.
          const retried = await ingestEvents(depsAt(clock), principal, { events: batch } as never);
          batches++;
          duplicatesAnswered += retried.duplicates;
          duplicatesInjected += batch.length;
          if (retried.inserted !== 0) throw new Error(`a retried batch inserted ${retried.inserted}`);
        }
      }),
    );
    for (const { fresh, clock } of group) {
      for (const event of fresh) {
        const customerId = event.customer_id ?? (byExternal.get(event.external_customer_id ?? '') as string);
        distinct.set(event.external_id, { event, ingestedAt: clock.toISOString(), customerId });
        sentBefore.push(event);
      }
    }
  }
  return { distinct, duplicatesAnswered, duplicatesInjected, batches };
}

/**
 * The usage-event records of one setup's organization in the table's real stream (turned on before
 * the writes: `turnOnStream`), in stream order, with their shard: read by a reader opened now, from
 * the stream's start. (Reading with iterators taken before the writes, while the shards were empty,
 * once failed in CI with DynamoDB Local's TrimmedDataAccessException.) Only that organization's: the
 * stream also holds every earlier setup's events of the same world, and driving those again moved
 * an arrival clock past the later setup's hours (the roll-ups of test:exactness never came due
 * after the 100,000-event run's arrivals).
 */
export async function streamRecords(
  table: Table,
  setup: Pick<ExactnessSetup, 'organizationId'>,
  expected: number,
): Promise<{ shardId: string; record: StreamRecord }[]> {
  const reader = await openTableStream(table);
  try {
    return await readAll(reader, setup.organizationId, expected);
  } finally {
    reader.close();
  }
}

async function readAll(
  reader: Awaited<ReturnType<typeof openStreamReader>>,
  organizationId: string,
  expected: number,
): Promise<{ shardId: string; record: StreamRecord }[]> {
  const read: { shardId: string; record: StreamRecord }[] = [];
  let count = 0;
  let quiet = 0;
  const deadline = Date.now() + 120_000;
  while (count < expected || quiet < 2) {
    if (Date.now() > deadline) throw new Error(`the stream gave ${count} of ${expected} usage events`);
    const n = await reader.readOnce((records, shardId) => {
      for (const record of records) {
        const [streamed] = streamedEvents([record as never]);
        if (streamed?.event.organization_id !== organizationId) continue;
        read.push({ shardId, record });
        count++;
      }
    });
    quiet = n === 0 ? quiet + 1 : 0;
  }
  return read;
}

/** The table's stream turned on, before the writes whose records a test reads. */
export const turnOnStream = (table: Table): Promise<string> =>
  enableTableStream({ dynamodbEndpoint: dynamodbEndpoint(), region: LOCAL_REGION, tableName: table.name });

const openTableStream = (table: Table) =>
  openStreamReader({
    dynamodbEndpoint: dynamodbEndpoint(),
    region: LOCAL_REGION,
    tableName: table.name,
    from: 'TRIM_HORIZON',
  });

export interface FaultPlan {
  /** Fail at this aggregate write of the invocation (0-based). */
  at: number;
  mode: 'before' | 'after';
}

/**
 * The consumer's table with one fault: the `at`-th hour-aggregate put either refused before it is
 * sent, or sent and then its answer lost (it succeeded). Counts the faults that fired.
 */
export function faultyTable(
  table: Table,
  plan: FaultPlan | undefined,
  fired: { before: number; after: number },
): Table {
  if (!plan) return table;
  let writes = 0;
  const send = async (command: unknown) => {
    const input = (command as { input?: { Item?: { SK?: string; PK?: string } } }).input;
    const isAggregate =
      command instanceof PutCommand &&
      String(input?.Item?.PK ?? '').startsWith(partitions.customerMeter) &&
      String(input?.Item?.SK ?? '').startsWith(HOUR_PREFIX);
    if (isAggregate && writes++ === plan.at) {
      if (plan.mode === 'before') {
        fired.before++;
        throw new Error('injected: the consumer failed before this aggregate write');
      }
      await table.doc.send(command as never);
      fired.after++;
      throw new Error('injected: the aggregate write succeeded, its answer was lost');
    }
    return table.doc.send(command as never);
  };
  return { ...table, doc: { send } as unknown as Table['doc'] };
}

export interface DriveOutcome {
  invocations: number;
  failures: number;
  replays: number;
  fired: { before: number; after: number };
}

/**
 * Lambda's mapping, per shard: batches in stream order; a failed batch bisected and retried (the
 * first half until it passes, then on), a passed batch sometimes delivered again, or an older one.
 * Shards run concurrently.
 */
export async function driveConsumer(
  world: World,
  shards: Map<string, StreamedEvent[]>,
  options: ExactnessOptions,
): Promise<DriveOutcome> {
  const random = prng(options.seed ^ 0x5eed);
  const outcome: DriveOutcome = { invocations: 0, failures: 0, replays: 0, fired: { before: 0, after: 0 } };
  const functionDeps = world.depsFor('meter-aggregator');
  const base = { ...functionDeps, table: options.direct ? world.table : functionDeps.table };
  if (options.consumerClock === 'arrival' && shards.size > 1) {
    throw new Error('the arrival clock drives one shard');
  }
  let latest = 0;
  const invoke = async (shardId: string, batch: StreamedEvent[], faulty: boolean) => {
    outcome.invocations++;
    for (const { event } of batch) latest = Math.max(latest, Date.parse(event.ingested_at));
    const at = new Date(latest + 60_000);
    const plan: FaultPlan | undefined = faulty
      ? { at: Math.floor(random() * 40), mode: random() < 0.5 ? 'before' : 'after' }
      : undefined;
    const table = faultyTable(base.table, plan, outcome.fired);
    await aggregateEvents(
      { table, now: options.consumerClock === 'arrival' ? () => at : base.now },
      shardId,
      batch,
    );
  };
  await Promise.all(
    [...shards.entries()].map(async ([shardId, records]) => {
      let position = 0;
      let size = options.consumerBatch;
      const passed: [number, number][] = [];
      while (position < records.length) {
        const batch = records.slice(position, position + size);
        try {
          await invoke(shardId, batch, random() < options.faultRate);
        } catch {
          outcome.failures++;
          // Bisect: the first half next (down to one record), as BisectBatchOnFunctionError does.
          size = Math.max(1, Math.ceil(batch.length / 2));
          continue;
        }
        passed.push([position, position + batch.length]);
        position += batch.length;
        size = options.consumerBatch;
        if (random() < options.replayRate) {
          // Redelivered: this batch again, and an older one (out of order).
          const [from, to] = passed[Math.floor(random() * passed.length)] as [number, number];
          for (const again of [batch, records.slice(from, to)]) {
            outcome.replays++;
            await invoke(shardId, again, false);
          }
        }
      }
    }),
  );
  return outcome;
}

/** Splits the stream's records into `n` shards by event id, each in stream order. */
export function splitShards(
  records: { shardId: string; record: StreamRecord }[],
  n: number,
): Map<string, StreamedEvent[]> {
  const shards = new Map<string, StreamedEvent[]>();
  for (const { shardId, record } of records) {
    const [streamed] = streamedEvents([record as never]);
    if (!streamed) continue;
    const k = Number.parseInt(streamed.event.id.slice(0, 2), 16) % n;
    const id = `${shardId}#${k}`;
    const list = shards.get(id) ?? [];
    list.push(streamed);
    shards.set(id, list);
  }
  return shards;
}

/** A state as compared: exact sums as text, unique values sorted. */
const comparable = (state: FoldState): unknown => JSON.stringify(state);

/** The reference fold of the distinct events, per (customer meter, hour). */
export function referenceFold(setup: ExactnessSetup, outcome: IngestOutcome): Map<string, FoldState> {
  const folded = new Map<string, FoldState>();
  for (const { event, ingestedAt, customerId } of outcome.distinct.values()) {
    const record = {
      name: event.name,
      timestamp_us: Date.parse(event.timestamp) * 1000,
      metadata: JSON.stringify(event.metadata),
    } as UsageEventRecord;
    const meterEvent = meterEventOf(record);
    for (const meter of setup.meters) {
      if (!meterCounts(meter, ingestedAt) || !matches(meter.filter, meterEvent)) continue;
      const key = `${customerMeterId(customerId, meter.id)}#${hourOf(ingestedAt)}`;
      folded.set(
        key,
        foldEvent(meter.aggregation, folded.get(key) ?? emptyState(meter.aggregation), meterEvent),
      );
    }
  }
  return folded;
}

/** What the consumer stored, per (customer meter, hour): the hour's state, and for `unique` its value items. */
/** What the roll-ups wrote: the aggregations whose customer meters have a roll-up, day aggregates, seen values, day values. */
export async function rolledUp(
  world: World,
  setup: ExactnessSetup,
): Promise<{ meters: Set<string>; days: number; seen: number; dayValues: number }> {
  const found = { meters: new Set<string>(), days: 0, seen: 0, dayValues: 0 };
  for (const customer of setup.customers) {
    for (const meter of setup.meters) {
      const id = customerMeterId(customer.id, meter.id);
      const items = await queryAll(world.table, {
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': `${partitions.customerMeter}${id}` },
        ConsistentRead: true,
      });
      for (const item of items) {
        const sk = String(item.SK);
        if (sk === `${partitions.customerMeter}${id}` && item.rollup)
          found.meters.add(meter.aggregation.func);
        if (sk.startsWith(DAY_PREFIX)) found.days++;
        if (sk.startsWith(SEEN_PREFIX)) found.seen++;
        if (sk.startsWith(DAY_VALUE_PREFIX)) found.dayValues++;
      }
    }
  }
  return found;
}

export async function storedFolds(world: World, setup: ExactnessSetup): Promise<Map<string, FoldState>> {
  const stored = new Map<string, FoldState>();
  for (const customer of setup.customers) {
    for (const meter of setup.meters) {
      const id = customerMeterId(customer.id, meter.id);
      const items: Record<string, unknown>[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const page = await world.table.doc.send(
          new QueryCommand({
            TableName: world.table.name,
            KeyConditionExpression: 'PK = :pk',
            ExpressionAttributeValues: { ':pk': `${partitions.customerMeter}${id}` },
            ConsistentRead: true,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        );
        items.push(...((page.Items ?? []) as Record<string, unknown>[]));
        start = page.LastEvaluatedKey;
      } while (start);
      const values = new Map<string, string[]>();
      for (const item of items) {
        const sk = String(item.SK);
        if (sk.startsWith(VALUE_PREFIX)) {
          const hour = String(item.hour);
          values.set(hour, [...(values.get(hour) ?? []), String(item.value)]);
        }
      }
      for (const item of items) {
        if (!String(item.SK).startsWith(HOUR_PREFIX)) continue;
        const hour = hourAggregateOf(item);
        const state =
          hour.state.func === 'unique'
            ? { func: 'unique' as const, values: (values.get(hour.hour) ?? []).sort() }
            : hour.state;
        stored.set(`${id}#${hour.hour}`, state);
      }
    }
  }
  return stored;
}

/** Every (customer meter, hour) whose stored state differs from the reference (missing and extra ones too). */
export function differences(reference: Map<string, FoldState>, stored: Map<string, FoldState>): string[] {
  const diffs: string[] = [];
  for (const [key, state] of reference) {
    const got = stored.get(key);
    if (!got || comparable(got) !== comparable(state))
      diffs.push(`${key}: expected ${comparable(state)}, got ${got ? comparable(got) : 'nothing'}`);
  }
  for (const key of stored.keys())
    if (!reference.has(key)) diffs.push(`${key}: stored, not in the reference`);
  return diffs;
}

/** The reference fold of the distinct events per customer meter over all time (no hours: one plain fold each). */
export function referenceTotals(setup: ExactnessSetup, outcome: IngestOutcome): Map<string, FoldState> {
  const folded = new Map<string, FoldState>();
  for (const { event, ingestedAt, customerId } of outcome.distinct.values()) {
    const meterEvent = meterEventOf({
      name: event.name,
      timestamp_us: Date.parse(event.timestamp) * 1000,
      metadata: JSON.stringify(event.metadata),
    } as UsageEventRecord);
    for (const meter of setup.meters) {
      if (!meterCounts(meter, ingestedAt) || !matches(meter.filter, meterEvent)) continue;
      const id = customerMeterId(customerId, meter.id);
      folded.set(
        id,
        foldEvent(meter.aggregation, folded.get(id) ?? emptyState(meter.aggregation), meterEvent),
      );
    }
  }
  return folded;
}

/**
 * What Get and List Customer Meters answer (over HTTP, in process, with a token of the setup's
 * organization) against the plain fold of the distinct events, for `customers` of the setup and
 * every meter: each difference as a line. A customer meter without events is a 404 and is not listed.
 */
export async function apiDifferences(
  world: World,
  setup: ExactnessSetup,
  totals: Map<string, FoldState>,
  customers: readonly { id: string }[],
): Promise<string[]> {
  const user = await createUser(world.admin, { email: `exact-reader-${randomUUID().slice(0, 8)}@x.example` });
  await addMember(world.admin, setup.organizationId, user.id);
  const { token } = await createPersonalAccessToken(world.admin, {
    userId: user.id,
    scope: 'customer_meters:read',
    comment: 'exactness: the API totals',
  });
  const diffs: string[] = [];
  for (const customer of customers) {
    const expected = new Map<string, number>();
    for (const meter of setup.meters) {
      const id = customerMeterId(customer.id, meter.id);
      const state = totals.get(id);
      const got = await world.call('GET', `/v1/customer-meters/${id}`, { token });
      if (!state) {
        if (got.status !== 404) diffs.push(`${id} (${meter.name}): no events, got ${got.status}`);
        continue;
      }
      const consumed = quantityOf(state);
      expected.set(id, consumed);
      const body = got.body as { consumed_units?: number; credited_units?: number; balance?: number };
      if (
        got.status !== 200 ||
        body.consumed_units !== consumed ||
        body.credited_units !== 0 ||
        body.balance !== -consumed
      )
        diffs.push(
          `${id} (${meter.name}): expected ${consumed}, got ${got.status} ${JSON.stringify({ consumed_units: body.consumed_units, credited_units: body.credited_units, balance: body.balance })}`,
        );
    }
    const listed = await world.call('GET', `/v1/customer-meters/?customer_id=${customer.id}&limit=100`, {
      token,
    });
    const items = (listed.body as { items?: { id: string; consumed_units: number }[] }).items ?? [];
    const byId = new Map(items.map((item) => [item.id, item.consumed_units]));
    if (listed.status !== 200 || byId.size !== expected.size)
      diffs.push(`list of ${customer.id}: ${listed.status}, ${byId.size} items, expected ${expected.size}`);
    for (const [id, consumed] of expected)
      if (byId.get(id) !== consumed)
        diffs.push(`list of ${customer.id}: ${id} expected ${consumed}, got ${byId.get(id)}`);
  }
  return diffs;
}

/**
 * What the windows' reads (`readPeriodUsage`: a subscription's period; `readUsageBetween`: Get Meter
 * Quantities, every day whole) answer for each of `windows` (hours, inclusive) of every customer
 * meter of the setup, from its roll-up's days and the hours around them, against the plain fold of
 * those hours' distinct events (`reference`, per customer meter and hour): each difference as a line.
 */
export async function windowDifferences(
  world: World,
  setup: ExactnessSetup,
  reference: Map<string, FoldState>,
  windows: readonly { from: string; to: string }[],
): Promise<string[]> {
  const diffs: string[] = [];
  for (const customer of setup.customers) {
    for (const meter of setup.meters) {
      const id = customerMeterId(customer.id, meter.id);
      const record = await getCustomerMeter(world.table, id);
      for (const hours of windows) {
        let expected = emptyState(meter.aggregation);
        for (const [key, state] of reference) {
          const [cm, hour] = key.split('#') as [string, string];
          if (cm === id && hour >= hours.from && hour <= hours.to) expected = mergeStates(expected, state);
        }
        const period = totalsOf(
          meter,
          await readPeriodUsage(world.table, id, hours, meter, new ReadBudget(), record),
        ).consumed_units;
        const between = await readUsageBetween(
          world.table,
          id,
          hours.from,
          hours.to,
          meter,
          new ReadBudget(),
          {
            record,
            whole: () => true,
          },
        );
        const quantity = quantityOf(
          meter.aggregation.func === 'unique'
            ? { func: 'unique', values: [...new Set(between.values.map((v) => v.value))] }
            : between.hours.reduce(
                (sum, hour) => mergeStates(sum, hour.state),
                emptyState(meter.aggregation),
              ),
        );
        const want = quantityOf(expected);
        if (period !== want || quantity !== want)
          diffs.push(
            `${id} (${meter.name}) ${hours.from}..${hours.to} (days from ${record?.rollup?.days_from}, through ${record?.rollup?.through}): expected ${want}, period ${period}, quantities ${quantity}`,
          );
      }
    }
  }
  return diffs;
}
