/**
 * The scale model's meter aggregation (issue 28): the real aggregator (`aggregateEvents`, as its
 * stream mapping drives it) folds one stream batch of usage events into the six meters of the
 * exactness property (one per aggregation), every DynamoDB call recorded and priced as the API's
 * are. Each repetition's events are ingested unrecorded through Ingest Events' handler and read back
 * from the table's stream, so the batch is exactly what the mapping would hand over.
 *
 * What an event costs to aggregate depends on how many of a batch's events share a customer: the
 * aggregates are per customer meter and hour, written once per batch. Three shapes: every event of
 * one customer, ten customers, a customer per event. End to end an event costs its share of Ingest
 * Events (the card case of a batch of 100) plus its share of this.
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBRecord } from 'aws-lambda';
import { openStreamReader, type StreamReader } from '#scripts/local/stream-reader.ts';
import type { StreamedEvent } from '#shared/services/meter-aggregation.ts';
import { aggregateEvents } from '#shared/services/meter-aggregation.ts';
import { EXACTNESS_METERS } from '#test/support/exactness-meters.ts';
import { type CaseModel, caseModel } from './model.ts';
import type { RecordedCall } from './recorder.ts';
import { quietly, type ScaleWorld } from './run-model.ts';

export const AGGREGATION_BATCH = 100;
export const AGGREGATION_SHAPES = [
  { customers: 1, label: 'every event of one customer' },
  { customers: 10, label: 'ten customers' },
  { customers: 100, label: 'a customer per event' },
] as const;

export interface AggregationCase extends CaseModel {
  /** Events in the recorded batch. */
  events: number;
  customers: number;
  /** True WRU per batch by kind of item written (`<partition prefix>/<sort key prefix>`), largest first. */
  writesByKind: [string, number][];
}

/** `CMETER#<id>` + `HOUR#…` → `CMETER/HOUR`: what kind of item a write is. */
const kindOf = (partition: string, sortKey = '') =>
  `${partition.split('#')[0]}/${sortKey.split('#')[0] || '(same)'}`;

function writesByKind(repetitions: RecordedCall[][]): [string, number][] {
  const units = new Map<string, number>();
  for (const calls of repetitions)
    for (const call of calls)
      if (call.kind === 'write' && !call.failed)
        for (const a of call.accesses) {
          const kind = kindOf(a.partition, a.sortKey);
          units.set(kind, (units.get(kind) ?? 0) + a.units / repetitions.length);
        }
  return [...units].sort((a, b) => b[1] - a[1]);
}

async function readEvents(reader: StreamReader, expected: number): Promise<Map<string, StreamedEvent[]>> {
  // The handler's own mapping of records to events (imported here: its module wires production
  // dependencies at import, after benchEnvironment() has set the environment).
  const { streamedEvents } = await import('#functions/meter-aggregator/handler.ts');
  const byShard = new Map<string, StreamedEvent[]>();
  let count = 0;
  const deadline = Date.now() + 60_000;
  while (count < expected) {
    if (Date.now() > deadline) throw new Error(`the stream gave ${count} of ${expected} usage events`);
    await reader.readOnce((records, shardId) => {
      const events = streamedEvents(records as unknown as DynamoDBRecord[]);
      byShard.set(shardId, [...(byShard.get(shardId) ?? []), ...events]);
      count += events.length;
    });
  }
  return byShard;
}

export async function modelAggregation(
  scale: ScaleWorld,
  options: { repetitions: number; warmups: number },
): Promise<AggregationCase[]> {
  const { world, recorder } = scale;
  const token = world.demo.personal_access_token;
  recorder.enabled = false;
  for (const meter of EXACTNESS_METERS) {
    const created = await quietly(() =>
      world.call('create-meter', 'POST', '/v1/meters/', {
        token,
        body: { ...meter, name: `scale ${meter.name} ${randomUUID().slice(0, 8)}` },
      }),
    );
    if (created.status !== 201) throw new Error(`Create Meter answered ${created.status}: ${created.body}`);
  }
  const customers: string[] = [];
  for (let i = 0; i < AGGREGATION_BATCH; i++) {
    const created = await quietly(() =>
      world.call('create-customer', 'POST', '/v1/customers/', {
        token,
        body: { email: `scale-meter-${randomUUID()}@example.com` },
      }),
    );
    customers.push((JSON.parse(created.body ?? '{}') as { id: string }).id);
  }
  recorder.enabled = true;
  const deps = { table: world.table, now: () => new Date() };
  const cases: AggregationCase[] = [];
  for (const shape of AGGREGATION_SHAPES) {
    const repetitions: RecordedCall[][] = [];
    for (let i = 0; i < options.warmups + options.repetitions; i++) {
      recorder.enabled = false;
      const reader = await openStreamReader({
        dynamodbEndpoint: world.endpoint,
        region: 'us-east-1',
        tableName: world.table.name,
        from: 'LATEST',
      });
      try {
        const run = randomUUID();
        const ingested = await quietly(() =>
          world.call('ingest-events', 'POST', '/v1/events/ingest', {
            token,
            body: {
              events: Array.from({ length: AGGREGATION_BATCH }, (_, n) => ({
                name: n % 10 === 0 ? 'nightly.batch' : 'api.call',
                customer_id: customers[n % shape.customers],
                external_id: `scale-meter-${run}-${n}`,
                metadata: { tokens: n, latency: (n * 37) % 500, model: `m${n % 7}`, region: 'us' },
              })),
            },
          }),
        );
        if (ingested.status !== 200)
          throw new Error(`Ingest Events answered ${ingested.status}: ${ingested.body}`);
        const batches = await readEvents(reader, AGGREGATION_BATCH);
        recorder.enabled = true;
        recorder.reset();
        // The mapping hands each shard's records over as their own batch.
        for (const [shardId, events] of batches) await quietly(() => aggregateEvents(deps, shardId, events));
        if (i >= options.warmups) repetitions.push([...recorder.calls]);
      } finally {
        reader.close();
      }
    }
    const model = caseModel(
      {
        key: `meter-aggregator-${shape.customers}`,
        label: `Aggregate a stream batch of ${AGGREGATION_BATCH} events, six meters, ${shape.label}`,
        operation: 'meter-aggregator',
        status: 200,
      },
      repetitions,
    );
    cases.push({
      ...model,
      events: AGGREGATION_BATCH,
      customers: shape.customers,
      writesByKind: writesByKind(repetitions),
    });
  }
  return cases;
}
