/**
 * `npm run bench`: the performance figures of issue 5, printed with their ratios and PASS/MISS
 * verdicts, and written to test/bench/RESULTS.md (full runs only).
 *
 *   npm run bench                      every section (~4-6 minutes on 2 shared cores)
 *   npm run bench -- --only warm       one section (or several: --only cold,dynamo); cost runs what it needs
 *   npm run bench -- --quick           fewer repetitions, 5 s of HTTP load (BENCH_QUICK=1 too)
 *   BENCH_HTTP_SECONDS=10 npm run bench -- --only http
 *
 * Sections: cold, dynamo, scaling, webhooks, freshness, warm, http, cost.
 */
import { writeFileSync } from 'node:fs';
import { cpus, freemem, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { coldStart } from './cold-start.ts';
import { cost } from './cost.ts';
import { dynamoWork, type OperationWork } from './dynamo-work.ts';
import { meterFreshness } from './freshness.ts';
import { benchEnvironment } from './handlers.ts';
import { httpThroughput } from './http.ts';
import { createLocalWorld, type LocalWorld, stopDynamoDbLocal } from './local-table.ts';
import { markdownSection, printSection, type SectionResult, verdicts } from './report.ts';
import { scaling } from './scaling.ts';
import { type WarmFigures, warmOverhead } from './warm.ts';
import { webhookPipeline } from './webhooks.ts';

const SECTIONS = ['cold', 'dynamo', 'scaling', 'webhooks', 'freshness', 'warm', 'http', 'cost'] as const;
type Section = (typeof SECTIONS)[number];

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    quick: { type: 'boolean', default: false },
  },
});
const quick = values.quick || process.env.BENCH_QUICK === '1';
const only = values.only
  ?.split(',')
  .map((s) => s.trim())
  .filter(Boolean);
for (const name of only ?? []) {
  if (!SECTIONS.includes(name as Section)) {
    console.error(`unknown section "${name}"; sections: ${SECTIONS.join(', ')}`);
    process.exit(2);
  }
}
const selected = (name: Section) => !only || only.includes(name);

const settings = {
  coldRuns: quick ? 15 : 21,
  dynamoRepetitions: quick ? 5 : 15,
  scalingRepetitions: quick ? 3 : 15,
  warmInvocations: quick ? 5_000 : 20_000,
  httpSeconds: Number(process.env.BENCH_HTTP_SECONDS ?? (quick ? 5 : 30)),
  httpConnections: 8,
  webhooks: { writes: quick ? 50 : 200, deliveries: quick ? 100 : 300 },
  freshness: { events: quick ? 50 : 200, loopBatches: quick ? 20 : 50 },
};

benchEnvironment();
const started = Date.now();
const results: SectionResult[] = [];
const show = (result: SectionResult) => {
  results.push(result);
  printSection(result);
};

const machine = [
  `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}`,
  `${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM (${(freemem() / 2 ** 30).toFixed(1)} free)`,
  `Linux ${release()}`,
  `Node ${process.version}`,
].join(', ');
console.log(`Commerce API benchmarks (${quick ? 'quick' : 'full'}${only ? `, only ${only.join(',')}` : ''})`);
console.log(`Machine: ${machine}`);

let world: LocalWorld | undefined;
const localWorld = async () => {
  world ??= await createLocalWorld('bench');
  return world;
};

let work: OperationWork[] | undefined;
let warm: WarmFigures[] | undefined;
try {
  if (selected('cold')) show(await coldStart({ runs: settings.coldRuns }));
  // Warm overhead runs before the DynamoDB Local sections, in a process not yet grown by them.
  if (selected('warm') || selected('cost')) {
    const measured = await warmOverhead({ invocations: selected('warm') ? settings.warmInvocations : 5_000 });
    warm = measured.figures;
    if (selected('warm')) show(measured.result);
  }
  if (selected('webhooks')) {
    // First of the DynamoDB Local sections, on a table of its own: its stream holds only the seed's and
    // this section's writes. After the others (10,000 wallets, a loaded JVM) its pipeline did not settle:
    // the deliverer's transactions kept conflicting on DynamoDB Local (503s).
    const own = await createLocalWorld('bench-webhooks');
    try {
      show(await webhookPipeline(own, settings.webhooks));
    } finally {
      await own.drop();
    }
  }
  if (selected('freshness')) {
    // On a table of its own, as the webhook section: its stream holds only this section's writes.
    const own = await createLocalWorld('bench-freshness');
    try {
      show(await meterFreshness(own, settings.freshness));
    } finally {
      await own.drop();
    }
  }
  if (selected('dynamo') || selected('cost')) {
    const measured = await dynamoWork(await localWorld(), { repetitions: settings.dynamoRepetitions });
    work = measured.work;
    if (selected('dynamo')) show(measured.result);
  }
  if (selected('scaling'))
    show(await scaling(await localWorld(), { repetitions: settings.scalingRepetitions }));
  if (world) {
    await world.drop();
    world = undefined;
  }
  await stopDynamoDbLocal();
  if (selected('http')) {
    show(await httpThroughput({ seconds: settings.httpSeconds, connections: settings.httpConnections }));
  }
  if (selected('cost') && work && warm) show(cost(work, warm));
} finally {
  if (world) await world.drop().catch(() => undefined);
  await stopDynamoDbLocal();
}

// Report in section order (1-7), whatever order they ran in.
results.sort((a, b) => SECTIONS.indexOf(a.id as Section) - SECTIONS.indexOf(b.id as Section));
const minutes = (Date.now() - started) / 60_000;
console.log('\n== Summary ==');
const summary: string[] = [];
for (const result of results) {
  const found = verdicts(result);
  const misses = found.filter((v) => v === 'MISS').length;
  const line = `${result.title}: ${found.length - misses} PASS, ${misses} MISS`;
  summary.push(line);
  console.log(`  ${line}`);
}
console.log(`  took ${minutes.toFixed(1)} min`);

if (!only) {
  const command = `npm run bench${quick ? ' -- --quick' : ''}`;
  const markdown = [
    '# Benchmark results',
    '',
    `Written by \`${command}\` (test/bench/run.ts) on ${new Date().toISOString()}, in ${minutes.toFixed(1)} min.`,
    '',
    `Machine: ${machine}. A shared, noisy 2-core machine: compare the ratios (measured in the same run), not absolute times.`,
    '',
    '## Summary',
    '',
    ...summary.map((line) => `- ${line}`),
    '',
    ...results.map(markdownSection),
  ].join('\n');
  writeFileSync(join(import.meta.dirname, 'RESULTS.md'), `${markdown.trimEnd()}\n`);
  console.log('  figures written to test/bench/RESULTS.md');
}
// DynamoDB Local and the HTTP stack are stopped; nothing else should hold the loop, but make sure.
process.exit(0);
