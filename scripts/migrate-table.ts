/**
 * `npm run migrate:table -- --from OLD --to NEW [--sync | --verify] [--segments 4] [--checkpoint FILE]`
 * moves every item of a table to another: the step between the two deploys of docs/deploying.md,
 * "Moving to a table without local indexes". Standard AWS credential chain and region
 * (`AWS_ENDPOINT_URL_DYNAMODB` for another endpoint).
 *
 *   (default)  copy OLD → NEW (parallel Scan segments, BatchWriteItem with retries; resumable from
 *              the checkpoint file, idempotent), then verify
 *   --sync     the catch-up, under the write freeze: put again what differs, delete what OLD no
 *              longer holds, then verify
 *   --verify   only compare: count and content hash of both tables
 *   --rehearse the whole procedure on a DynamoDB Local of its own (no AWS): a table of the retired
 *              shape filled by the services, copied, interrupted and resumed, caught up, verified
 *
 * Verification prints `before N items / after N items, equal` and exits 1 when they differ.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { tableDefinition } from '#shared/data/table.ts';
import { tableShapeDifferences } from './local/create-table.ts';
import { startDynamoDbLocal } from './local/dynamodb-local.ts';
import { rehearseMigration } from './migrate/rehearse.ts';
import {
  copyTable,
  DEFAULT_SEGMENTS,
  syncTable,
  verificationLine,
  verifyTables,
} from './migrate/table-copy.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const USAGE = `Usage: npm run migrate:table -- --from OLD_TABLE --to NEW_TABLE [--sync | --verify]
                                 [--segments ${DEFAULT_SEGMENTS}] [--checkpoint FILE]
       npm run migrate:table -- --rehearse

See docs/deploying.md, "Moving to a table without local indexes".`;

const { values } = parseArgs({
  options: {
    from: { type: 'string' },
    to: { type: 'string' },
    sync: { type: 'boolean', default: false },
    verify: { type: 'boolean', default: false },
    rehearse: { type: 'boolean', default: false },
    segments: { type: 'string' },
    checkpoint: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

const say = (line: string) => console.log(line);

function fail(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
}

async function rehearse(): Promise<number> {
  say('Rehearsal on a DynamoDB Local of its own:');
  const db = await startDynamoDbLocal();
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: db.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const result = await rehearseMigration(client, { say: (line) => say(`  ${line}`) });
    return result.final.equal ? 0 : 1;
  } finally {
    client.destroy();
    await db.stop();
  }
}

/** The new table must be of today's shape (no local index), the old one keyed the same way. */
async function checkTables(client: DynamoDBClient, from: string, to: string): Promise<void> {
  const [old, target] = await Promise.all(
    [from, to].map(async (name) => (await client.send(new DescribeTableCommand({ TableName: name }))).Table),
  );
  const differences = target ? tableShapeDifferences(target) : ['absent'];
  if (differences.length > 0) {
    throw new Error(`--to ${to} is not of the shape of shared/data/table.ts: ${differences.join('; ')}`);
  }
  const keyOf = (table: typeof old) =>
    (table?.KeySchema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');
  if (keyOf(old) !== keyOf(target))
    throw new Error(`--from ${from} is keyed ${keyOf(old)}, --to ${to} ${keyOf(target)}`);
}

async function main(): Promise<number> {
  if (values.help) {
    say(USAGE);
    return 0;
  }
  if (values.rehearse) return rehearse();
  const { from, to } = values;
  if (!from || !to) fail('--from and --to are required');
  if (from === to) fail('--from and --to name the same table');
  if (values.sync && values.verify) fail('--sync and --verify exclude each other');
  const segments = values.segments === undefined ? DEFAULT_SEGMENTS : Number(values.segments);
  if (!Number.isInteger(segments) || segments < 1 || segments > 1000000)
    fail('--segments must be a whole number from 1');

  const client = new DynamoDBClient({});
  try {
    await checkTables(client, from, to);
    if (values.sync) {
      const started = Date.now();
      const result = await syncTable({
        client,
        from,
        to,
        segments,
        keyNames: [tableDefinition.partitionKey.name, tableDefinition.sortKey.name],
      });
      say(
        `catch-up ${from} → ${to}: ${result.put} items put again, ${result.deleted} deleted, ${result.unchanged} unchanged (${((Date.now() - started) / 1000).toFixed(1)} s)`,
      );
    } else if (!values.verify) {
      const checkpoint = values.checkpoint ?? join('.local', `migrate-${from}-to-${to}.json`);
      const started = Date.now();
      const result = await copyTable({ client, from, to, segments, checkpoint });
      say(
        `copy ${from} → ${to}: ${result.copied} items written in ${segments} segments${result.resumed ? ` (resumed; ${result.copiedInAll} in all)` : ''} (${((Date.now() - started) / 1000).toFixed(1)} s; checkpoint ${checkpoint})`,
      );
    }
    const verification = await verifyTables(client, from, to, segments);
    say(`verify: ${verificationLine(verification)}`);
    return verification.equal ? 0 : 1;
  } finally {
    client.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`migrate:table failed: ${error.message}`);
    process.exit(1);
  },
);
