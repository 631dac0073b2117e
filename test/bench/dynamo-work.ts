/**
 * 2. DynamoDB work per request: every operation through its real handler against DynamoDB Local,
 * with a client middleware that injects `ReturnConsumedCapacity: 'TOTAL'` into every command and
 * records round trips and consumed capacity (see `CapacityMeter`).
 */
import { type OperationName, operations } from '#shared/operations.ts';
import { operationCards } from '#test/cards/index.ts';
import type { LocalWorld, MeteredCall } from './local-table.ts';
import { fmt, mean, median, type SectionResult, verdict } from './report.ts';
import { benchRun, createClient, type DynamoCase } from './work-kit.ts';

type Case = DynamoCase & { operation: OperationName };

export interface OperationWork {
  key: string;
  label: string;
  operation: OperationName;
  status: number;
  roundTrips: number;
  target: number | undefined;
  /** Mean read and write request units per request (failed conditional writes counted as 1 WRU). */
  rru: number;
  wru: number;
  failedWrites: number;
  /** Median time of one DynamoDB round trip (DynamoDB Local, loopback), and of the whole request. */
  roundTripMs: number;
  requestMs: number;
  /** Whether the case applies (the idempotency cases need the header to work). */
  available: boolean;
}

/** Every operation's cases, from its card (test/cards/<operation>.ts, slot `dynamoWork`), in route-table order. */
const CASES: Case[] = (await operationCards()).flatMap((card) =>
  card.dynamoWork.map((c) => ({ ...c, operation: card.name })),
);

// Every operation of the route table has at least one case: a new one cannot go unmeasured.
for (const { name } of operations) {
  if (!CASES.some((c) => c.operation === name)) throw new Error(`dynamo-work: no case for ${name}`);
}

/** Does `Idempotency-Key` work yet? The same key twice must give the same answer, and create once. */
async function idempotencyWorks(world: LocalWorld): Promise<boolean> {
  const key = `bench-${benchRun}-probe`;
  const first = await createClient(world, key);
  const second = await createClient(world, key);
  return first.status === 201 && second.status === 201 && first.body === second.body;
}

export async function dynamoWork(
  world: LocalWorld,
  options: { repetitions: number },
): Promise<{ result: SectionResult; work: OperationWork[] }> {
  const withKey = await idempotencyWorks(world);
  const work: OperationWork[] = [];
  const warmups = 3;
  for (const c of CASES) {
    const available = withKey || !c.key.includes('+');
    if (!available) {
      work.push({
        ...c,
        target: c.target,
        roundTrips: Number.NaN,
        rru: Number.NaN,
        wru: Number.NaN,
        failedWrites: 0,
        roundTripMs: Number.NaN,
        requestMs: Number.NaN,
        available,
      });
      continue;
    }
    const perRequest: MeteredCall[][] = [];
    const requestMs: number[] = [];
    for (let i = 0; i < warmups + options.repetitions; i++) {
      await c.prepare?.(world, i);
      world.meter.reset();
      const started = performance.now();
      const reply = await c.send(world, i);
      const elapsed = performance.now() - started;
      // A snapshot: the next `prepare` sends requests too, before the meter is reset.
      const calls = [...world.meter.calls];
      if (reply.status !== c.status) {
        throw new Error(`${c.label}: expected ${c.status}, got ${reply.status} ${reply.body ?? ''}`);
      }
      if (i < warmups) continue;
      perRequest.push(calls);
      requestMs.push(elapsed);
    }
    const units = (kind: 'read' | 'write') =>
      mean(
        perRequest.map((calls) =>
          calls.filter((x) => x.kind === kind).reduce((s, x) => s + x.units + (x.failed ? 1 : 0), 0),
        ),
      );
    work.push({
      key: c.key,
      label: c.label,
      operation: c.operation,
      status: c.status,
      target: c.target,
      roundTrips: Math.max(...perRequest.map((calls) => calls.length)),
      rru: units('read'),
      wru: units('write'),
      failedWrites: mean(perRequest.map((calls) => calls.filter((x) => x.failed).length)),
      roundTripMs: median(perRequest.flat().map((x) => x.ms)),
      requestMs: median(requestMs),
      available,
    });
  }

  const base = (key: string) => work.find((w) => w.key === key.split('+')[0]);
  const rows = work.map((w) => {
    if (!w.available)
      return [
        w.label,
        'n/a',
        `≤ ${w.target}`,
        'n/a (Idempotency-Key not working yet)',
        '',
        '',
        '',
        '',
        '',
        '',
      ];
    const reference = w.key.includes('+') ? base(w.key) : undefined;
    return [
      w.label,
      w.roundTrips,
      reference ? `≤ ${reference.roundTrips} + 2` : `≤ ${w.target}`,
      reference
        ? `${fmt(w.roundTrips / reference.roundTrips, 2)}× (${w.roundTrips >= reference.roundTrips ? '+' : ''}${w.roundTrips - reference.roundTrips})`
        : `${fmt(w.roundTrips / (w.target as number), 2)}× of limit`,
      verdict(w.roundTrips <= (reference ? reference.roundTrips + 2 : (w.target as number))),
      fmt(w.rru, 1),
      fmt(w.wru, 1),
      fmt(w.failedWrites, 0),
      fmt(w.roundTripMs, 1),
      fmt(w.requestMs, 1),
    ];
  });
  return {
    work,
    result: {
      id: 'dynamo',
      title: '2. DynamoDB work per request',
      method: [
        'Real handlers (createHandler) in process against DynamoDB Local seeded with the demo data; a middleware on the',
        "document client's stack sets ReturnConsumedCapacity=TOTAL on every command and sums round trips and",
        `CapacityUnits (arrays for BatchGet/TransactWrite). ${warmups} warm-ups, then ${options.repetitions} requests per case;`,
        'round trips: the maximum seen; units: mean per request; times: medians (DynamoDB Local over loopback).',
      ],
      tables: [
        {
          title: 'Round trips and capacity per request',
          note: 'round trips include authentication',
          columns: [
            'operation',
            'round trips',
            'target',
            'ratio',
            'verdict',
            'RRU',
            'WRU',
            'failed cond. writes',
            'ms / round trip',
            'ms / request',
          ],
          rows,
        },
      ],
      notes: [
        "WRU of TransactWriteItems already count 2 units per item per KB (DynamoDB Local reports transactional capacity): Create Subscription's put + 2 condition checks = 6 WRU.",
        'Writes to items indexed by GSI1 (OAuth client, subscription) also pay the index write.',
        "A failed conditional write (delete of an unknown id, an idempotency replay's claim) returns no ConsumedCapacity but DynamoDB still charges it (by item size): counted here as 1 WRU, a floor.",
        withKey
          ? 'Idempotency-Key works: first use adds the claim (PutItem) and the completion (UpdateItem); a replay is authentication plus the failed claim, which returns the stored answer.'
          : 'Idempotency-Key did not work when this ran (same key twice gave different answers): those rows are n/a.',
      ],
    },
  };
}
