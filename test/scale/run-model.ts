/**
 * The scale model: every write and list operation of the route table, through its real handler
 * against DynamoDB Local, each DynamoDB call recorded and priced by DynamoDB's rules.
 *
 * The operations come from the route table (`shared/generated/operations.ts`: a write is any method
 * but GET, a list an operation named `list-…`) and their requests from their cards' DynamoDB-work
 * cases (`test/cards/<operation>.ts`, slot `dynamoWork`, the bench's cases of
 * `test/bench/dynamo-work.ts`), in the bench's world (`test/bench/local-table.ts`: DynamoDB Local,
 * the demo data seeded by the operator commands). Nothing here lists operations by hand: an
 * operation added to the route table with a card is modelled on the next run.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { operations } from '#shared/operations.ts';
import { createLocalWorld, type LocalWorld, stopDynamoDbLocal } from '#test/bench/local-table.ts';
import type { DynamoCase } from '#test/bench/work-kit.ts';
import { operationCards } from '#test/cards/index.ts';
import { type CaseModel, caseModel, requestCost } from './model.ts';
import { DynamoRecorder, type RecordedCall } from './recorder.ts';

export type ModelledCase = DynamoCase & { operation: string };

/** Write operations (any method but GET) and list operations, by the route table. */
export const isWriteOrList = (name: string): boolean => {
  const operation = operations.find((op) => op.name === name);
  if (!operation) throw new Error(`unknown operation ${name}`);
  return operation.method !== 'GET' || name.startsWith('list-');
};

/** Every card case of a write or list operation, in route-table order. */
export async function modelledCases(): Promise<ModelledCase[]> {
  return (await operationCards())
    .filter((card) => isWriteOrList(card.name))
    .flatMap((card) => card.dynamoWork.map((c) => ({ ...c, operation: card.name })));
}

export interface ScaleWorld {
  world: LocalWorld;
  recorder: DynamoRecorder;
  raw: DynamoDBClient;
  drop(): Promise<void>;
}

export async function scaleWorld(): Promise<ScaleWorld> {
  const world = await createLocalWorld('scale');
  const raw = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: world.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const recorder = new DynamoRecorder(raw);
  recorder.install(world.table.doc);
  return {
    world,
    recorder,
    raw,
    async drop() {
      raw.destroy();
      await world.drop();
    },
  };
}

/** The handlers' one log line per request would bury the report (nests: concurrent calls share one mute). */
let muted = 0;
const log = console.log;
export async function quietly<T>(work: () => Promise<T>): Promise<T> {
  if (muted++ === 0) console.log = () => {};
  try {
    return await work();
  } finally {
    if (--muted === 0) console.log = log;
  }
}

/** One request of the case, recorded (its uncounted `prepare` first). */
export async function recordOne(
  scale: ScaleWorld,
  c: DynamoCase,
  i: number,
): Promise<{ calls: RecordedCall[]; status: number; body: string | undefined }> {
  await quietly(async () => c.prepare?.(scale.world, i));
  scale.recorder.reset();
  const reply = await quietly(() => c.send(scale.world, i));
  return { calls: [...scale.recorder.calls], status: reply.status, body: reply.body };
}

export interface ModelRun {
  cases: CaseModel[];
  failures: { label: string; detail: string }[];
  /** Per case, the recorded calls of its last repetition (for the deep pages). */
  samples: Map<string, RecordedCall[]>;
}

export async function runModel(
  scale: ScaleWorld,
  options: { repetitions: number; warmups: number },
): Promise<ModelRun> {
  const run: ModelRun = { cases: [], failures: [], samples: new Map() };
  for (const c of await modelledCases()) {
    const repetitions: RecordedCall[][] = [];
    try {
      for (let i = 0; i < options.warmups + options.repetitions; i++) {
        const { calls, status, body } = await recordOne(scale, c, i);
        if (status !== c.status)
          throw new Error(`expected ${c.status}, got ${status} ${body ?? ''}`.slice(0, 300));
        if (i >= options.warmups) repetitions.push(calls);
      }
    } catch (error) {
      run.failures.push({ label: c.label, detail: (error as Error).message });
      continue;
    }
    run.cases.push(caseModel(c, repetitions));
    run.samples.set(c.key, repetitions.at(-1) ?? []);
  }
  return run;
}

// ---------------------------------------------------------------------------------------------
// Deep pages: a list filled to page 200 at limit 100 by copying the entries a create wrote.
// ---------------------------------------------------------------------------------------------

export interface DeepPage {
  label: string;
  /** The write case whose requests filled the list. */
  filledBy: string;
  entries: number;
  deepPage: number;
  page1: ReturnType<typeof requestCost>;
  deep: ReturnType<typeof requestCost>;
  status: number;
}

/**
 * A list at depth: its page 1 (limit 100) recorded to learn the partitions it reads; the write case
 * whose request put the most entries into them, counts included (its creation, found in the
 * recorded writes, not named by hand), sent `entries` more times; then page 1 and the deepest full
 * page recorded.
 */
export async function deepPages(
  scale: ScaleWorld,
  run: ModelRun,
  cases: ModelledCase[],
  listCase: ModelledCase,
  entries: number,
  query: (page: number, limit: number) => string,
  limit = 100,
): Promise<DeepPage | { label: string; skipped: string }> {
  const page = async (n: number) => {
    scale.recorder.reset();
    const reply = await quietly(() =>
      scale.world.call(listCase.operation as never, 'GET', query(n, limit), {
        token: scale.world.demo.personal_access_token,
      }),
    );
    return { calls: [...scale.recorder.calls], status: reply.status, body: reply.body };
  };
  const before = await page(1);
  const label = `${listCase.operation} \`${query(1, limit).replace(/page=1/, 'page=<n>')}\``;
  if (before.status !== 200) return { label, skipped: `page 1 answered ${before.status}` };
  const read = new Set(
    before.calls.filter((c) => c.command === 'Query').flatMap((c) => c.accesses.map((a) => a.partition)),
  );
  let source: { c: ModelledCase; written: number } | undefined;
  for (const c of cases) {
    const calls = run.samples.get(c.key);
    if (!calls || c.key.includes('+') || c.operation === listCase.operation) continue;
    const writes = calls.filter((x) => x.kind === 'write' && !x.failed).flatMap((x) => x.accesses);
    const counted = writes.some((a) => read.has(a.partition) && a.sortKey?.startsWith('#COUNT#'));
    const written = writes.filter((a) => a.action === 'put' && read.has(a.partition)).length;
    if (counted && written > (source?.written ?? 0)) source = { c, written };
  }
  if (!source) return { label, skipped: 'no write case of the cards adds to its partitions' };
  const filler = source.c;
  scale.recorder.enabled = false;
  try {
    const parallel = 8;
    for (let i = 0; i < entries; i += parallel) {
      await Promise.all(
        Array.from({ length: Math.min(parallel, entries - i) }, async (_, j) => {
          const n = 100_000 + i + j;
          await quietly(async () => filler.prepare?.(scale.world, n));
          const reply = await quietly(() => filler.send(scale.world, n));
          if (reply.status !== filler.status)
            throw new Error(`${filler.label} answered ${reply.status} while filling`);
        }),
      );
    }
  } catch (error) {
    return { label, skipped: (error as Error).message };
  } finally {
    scale.recorder.enabled = true;
  }
  const deepPage = Math.floor(entries / limit);
  const first = await page(1);
  const deep = await page(deepPage);
  return {
    label,
    filledBy: filler.label,
    entries,
    deepPage,
    page1: requestCost(first.calls),
    deep: requestCost(deep.calls),
    status: deep.status,
  };
}

export { stopDynamoDbLocal };
