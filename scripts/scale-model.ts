/**
 * `npx tsx scripts/scale-model.ts [--repetitions N] [--deep-entries N] [--no-deep] [--write-doc]`
 *
 * The scale model (issue 25): every write and list operation through its real handler against
 * DynamoDB Local, every DynamoDB call recorded and priced by DynamoDB's rules (test/scale/): round
 * trips, items, true WRU/RRU beside DynamoDB Local's ConsumedCapacity, the hottest shared partition
 * per request and the per-tenant ceiling it sets; then the list pages at depth. `--write-doc`
 * replaces the generated section of docs/data-model.md with the tables, dated, with the commit.
 */
import { execSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { ENTRY_BYTES, LIST_READ_UNITS } from '#shared/data/listing.ts';
import { operations } from '#shared/operations.ts';
import { benchEnvironment } from '#test/bench/handlers.ts';
import { type AggregationCase, modelAggregation } from '#test/scale/aggregator-case.ts';
import { modelDeliveryAttempt } from '#test/scale/delivery-case.ts';
import type { CaseModel, Hottest } from '#test/scale/model.ts';
import {
  type DeepPage,
  deepPages,
  modelledCases,
  runModel,
  scaleWorld,
  stopDynamoDbLocal,
} from '#test/scale/run-model.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
const repetitions = option('--repetitions', 3);
const deepEntries = option('--deep-entries', 500);
const LIMIT = 100;
const TARGET_PAGE = 200;

benchEnvironment();
const started = Date.now();
const scale = await scaleWorld();
const demo = scale.world.demo as unknown as Record<string, unknown>;

/** A key with the demo data's ids named (`<organization>`, `<free_product>`), other ids `<id>`. */
const names = new Map<string, string>();
for (const [field, value] of Object.entries(demo)) {
  if (typeof value === 'string' && /^[0-9a-f-]{36}$/.test(value))
    names.set(value, `<${field.replace(/_id$/, '')}>`);
}
const shape = (key: string) =>
  key
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => names.get(id) ?? '<id>')
    .replace(/[0-9a-f]{64}|[A-Za-z0-9_-]{43}(?=$|#)/g, '<hash>');

const fmt = (n: number, digits = 1) => (Number.isInteger(n) ? String(n) : n.toFixed(digits));
const hot = (h: Hottest | undefined) =>
  h
    ? [`\`${shape(h.partition)}\``, fmt(h.units), fmt(Math.floor(h.ceiling), 0)]
    : ['none shared', '', 'per object'];

let run: Awaited<ReturnType<typeof runModel>>;
const deep: (DeepPage | { label: string; skipped: string })[] = [];
let aggregation: AggregationCase[] = [];
try {
  run = await runModel(scale, { repetitions, warmups: 1 });
  // The pipeline's delivery attempt: the real deliverer, its own case (no route, no card case).
  try {
    run.cases.push(await modelDeliveryAttempt(scale, { repetitions, warmups: 1 }));
  } catch (error) {
    run.failures.push({ label: 'Deliver one message', detail: (error as Error).message });
  }
  // The meter aggregator's fold of one stream batch: the real aggregator, three batch shapes, in a
  // world of its own: its customers and customer meters would otherwise fill the lists the deep
  // pages measure, and the deep pages' objects its organization.
  try {
    const own = await scaleWorld();
    try {
      for (const [field, value] of Object.entries(own.world.demo as unknown as Record<string, unknown>))
        if (typeof value === 'string' && /^[0-9a-f-]{36}$/.test(value))
          names.set(value, `<${field.replace(/_id$/, '')}>`);
      aggregation = await modelAggregation(own, { repetitions, warmups: 1 });
      run.cases.push(...aggregation);
    } finally {
      await own.drop();
    }
  } catch (error) {
    run.failures.push({ label: 'Aggregate a stream batch', detail: (error as Error).message });
  }
  if (!args.includes('--no-deep')) {
    const cases = await modelledCases();
    for (const listCase of cases.filter((c) => c.operation.startsWith('list-'))) {
      // One deep run per operation (its first case), for operations the demo token can page.
      if (cases.find((c) => c.operation === listCase.operation) !== listCase) continue;
      const operation = operations.find((op) => op.name === listCase.operation);
      if (!operation || operation.path.includes('{') || operation.credential !== 'personal_access_token') {
        deep.push({ label: listCase.operation, skipped: 'needs a path parameter or another credential' });
        continue;
      }
      deep.push(
        await deepPages(
          scale,
          run,
          cases,
          listCase,
          deepEntries,
          (page, limit) => `${operation.path}?page=${page}&limit=${limit}`,
          LIMIT,
        ),
      );
    }
  }
} finally {
  await scale.drop();
  await stopDynamoDbLocal();
}

const table = (columns: string[], rows: (string | number)[][]) =>
  [
    `| ${columns.join(' | ')} |`,
    `|${columns.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');

const caseRow = (c: CaseModel) => [
  c.label,
  c.roundTrips,
  `${fmt(c.itemsWritten)} / ${fmt(c.itemsChecked)} / ${fmt(c.itemsRead)}`,
  fmt(c.indexWrites),
  fmt(c.trueWru),
  fmt(c.localWru),
  fmt(c.trueRru),
  fmt(c.localRru),
  ...hot(c.hotWrite),
  ...hot(c.hotRead),
  c.largestTransaction.actions
    ? `${c.largestTransaction.actions} / ${fmt(c.largestTransaction.bytes / 1024)} KB`
    : '',
];

const commit = execSync('git rev-parse --short HEAD').toString().trim();
const dirty = execSync('git status --porcelain -- shared functions infra').toString().trim()
  ? ' (with uncommitted changes)'
  : '';
const lines: string[] = [];
lines.push(
  `Measured ${new Date().toISOString().slice(0, 10)} on commit ${commit}${dirty} by \`npx tsx scripts/scale-model.ts\` (${repetitions} repetitions after 1 warm-up; means per request; round trips include authentication).`,
  '',
  table(
    [
      'operation (card case)',
      'round trips',
      'items written / checked / read',
      'index writes',
      'true WRU',
      'Local WRU',
      'true RRU',
      'Local RRU',
      'hottest shared write partition',
      'WCU on it',
      'ceiling (req/s at 1,000 WCU/s on it)',
      'hottest shared read partition',
      'RCU on it',
      'read ceiling (req/s at 3,000 RCU/s on it)',
      'largest transaction (actions / size)',
    ],
    run.cases.map(caseRow),
  ),
);
if (run.failures.length) {
  lines.push('', 'Cases that did not answer as their card expects (not modelled):', '');
  for (const f of run.failures) lines.push(`- ${f.label}: ${f.detail}`);
}
const ingest = run.cases.find((c) => c.key === 'ingest-events');
if (ingest && aggregation.length) {
  const INGEST_BATCH = 100;
  const ingestCeiling = ingest.hotWrite ? ingest.hotWrite.ceiling * INGEST_BATCH : Number.POSITIVE_INFINITY;
  lines.push(
    '',
    `Usage events end to end: an event's share of Ingest Events (its card's batch of ${INGEST_BATCH}: ${fmt(ingest.trueWru / INGEST_BATCH, 2)} true WRU, ingest ceiling ${fmt(Math.floor(ingestCeiling), 0)} events/s per tenant on \`${shape(ingest.hotWrite?.partition ?? 'none')}\`) plus its share of the aggregator's batch, by how many customers the batch's events share.`,
    '',
    table(
      [
        'aggregator batch',
        'aggregation true WRU per event',
        'end-to-end true WRU per event',
        "aggregation's hottest shared partition",
        'events/s it allows (1,000 WCU/s)',
        'aggregation WRU per batch, by item written',
      ],
      aggregation.map((a) => [
        `${a.events} events, ${a.customers} customer${a.customers === 1 ? '' : 's'}`,
        fmt(a.trueWru / a.events, 2),
        fmt(ingest.trueWru / INGEST_BATCH + a.trueWru / a.events, 2),
        a.hotWrite ? `\`${shape(a.hotWrite.partition)}\`` : 'none shared',
        a.hotWrite ? fmt(Math.floor(a.hotWrite.ceiling * a.events), 0) : 'per customer meter',
        a.writesByKind.map(([kind, units]) => `${kind} ${fmt(units)}`).join(', '),
      ]),
    ),
  );
}
if (deep.length) {
  const measured = Math.floor(deepEntries / LIMIT);
  lines.push(
    '',
    `List pages at depth (no filter; every list but the delivery list reads at most ${LIST_READ_UNITS} RRU per request, measured in test/integration/list-bounds.test.ts): ${deepEntries} more objects created through the write case that adds to the list's partitions (found in the recorded writes), then page 1 and page ${measured} recorded. Page ${TARGET_PAGE} is ${measured >= TARGET_PAGE ? 'measured' : `extrapolated linearly from those two (a page reads offset + limit entries per source); \`--deep-entries ${TARGET_PAGE * LIMIT}\` measures it`}.`,
    '',
    table(
      [
        'list',
        'filled by',
        'page 1: RRU (round trips)',
        `page ${measured}: RRU (round trips)`,
        `items read at page ${measured}`,
        `page ${TARGET_PAGE}: RRU`,
      ],
      deep.map((d) => {
        if ('skipped' in d) return [d.label, `not filled: ${d.skipped}`, '', '', '', ''];
        const unbounded =
          d.deepPage >= TARGET_PAGE
            ? fmt(d.deep.trueRru)
            : `≈ ${fmt(d.page1.trueRru + ((d.deep.trueRru - d.page1.trueRru) * (TARGET_PAGE - 1)) / (d.deepPage - 1), 0)}`;
        // The read bound (shared/data/listing.ts): page 200's offset + limit entries at their smallest
        // against 500 RRU; a list the bound covers answers 422 before reading an entry.
        const bounded = !d.label.startsWith('list-webhook-deliveries');
        const entries = TARGET_PAGE * LIMIT;
        const refused = bounded && entries * ENTRY_BYTES.customerList.min > LIST_READ_UNITS * 4096;
        const at200 = refused
          ? `422 at \`page\` after the counts only (${entries} entries × ≥ 400 B > ${LIST_READ_UNITS} RRU; unbounded it would read ${unbounded})`
          : unbounded;
        return [
          d.label,
          d.filledBy,
          `${fmt(d.page1.trueRru)} (${d.page1.roundTrips})`,
          `${fmt(d.deep.trueRru)} (${d.deep.roundTrips})${d.status === 200 ? '' : `, answered ${d.status}`}`,
          d.deep.itemsRead,
          at200,
        ];
      }),
    ),
  );
}
const report = lines.join('\n');
console.log(report);
console.log(`\n(took ${((Date.now() - started) / 1000).toFixed(0)} s)`);

if (args.includes('--write-doc')) {
  const path = 'docs/data-model.md';
  const begin = '<!-- scale-model:begin (generated by scripts/scale-model.ts --write-doc) -->';
  const end = '<!-- scale-model:end -->';
  const doc = readFileSync(path, 'utf8');
  const at = doc.indexOf(begin);
  const until = doc.indexOf(end);
  if (at < 0 || until < at) throw new Error(`${path} has no ${begin} … ${end} section`);
  writeFileSync(path, `${doc.slice(0, at + begin.length)}\n${report}\n${doc.slice(until)}`);
  console.log(`written to ${path}`);
}
