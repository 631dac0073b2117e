/**
 * The migration rehearsal: a table of the retired shape (five local indexes) filled the way the code
 * of that time filled it, moved to a table of today's shape with the migration's own functions, and
 * the two compared. Run on DynamoDB Local (`npm run migrate:table -- --rehearse`, and the fast tier's
 * test/integration/migrate-table.test.ts) and on moto, between the deploy that creates the new table
 * beside the old one and the deploy that switches to it (`npm run deploy:rehearse`).
 *
 * What it does, in the order of docs/deploying.md's procedure:
 * 1. fill the old table: the demo seed (organizations, users, tokens, customers, products,
 *    subscriptions, webhook endpoints, deliveries: the services' own writes) plus more customers with
 *    wallets, every wallet then given the five sort keys the old `insertWallet` wrote;
 * 2. copy, interrupted after a few pages and resumed from its checkpoint;
 * 3. write to the old table as live traffic would meanwhile (a new customer, a new wallet on an
 *    existing customer, a deleted session), and see the check find the tables different;
 * 4. the catch-up pass (under the write freeze in production), then the check: equal;
 * 5. List Wallets' reader on both tables, every sorting: the same wallets in the same order.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type AdminContext, createCustomer, createWallet } from '#scripts/admin/commands.ts';
import { legacyTableDefinition, legacyWalletSortKeys } from '#shared/data/legacy-table.ts';
import { keys, tableDefinition } from '#shared/data/table.ts';
import { parseSorting, SORTING_VALUES } from '#shared/data/wallet-order.ts';
import { listWalletPage, WALLETS_PER_CUSTOMER_MAX } from '#shared/data/wallets.ts';
import { newKeySetDocument, staticKeyring } from '#shared/domain/keyring.ts';
import { hashSecret } from '#shared/domain/secrets.ts';
import { deleteTable, ensureTable } from '../local/create-table.ts';
import { seedDemo } from '../local/seed.ts';
import {
  CopyInterrupted,
  copyTable,
  type SyncResult,
  syncTable,
  type Verification,
  verificationLine,
  verifyTables,
} from './table-copy.ts';

export interface RehearsalOptions {
  /** The old table: created here (retired shape) unless it exists, as on moto where the stack made it. */
  from?: string;
  /** The new table: likewise. */
  to?: string;
  /** Customers added to the demo seed, each with `walletsEach` wallets. */
  customers?: number;
  walletsEach?: number;
  segments?: number;
  say?: (line: string) => void;
}

export interface RehearsalResult {
  filled: number;
  wallets: number;
  interruptedAfter: number;
  drifted: Verification;
  sync: SyncResult;
  final: Verification;
  /** Sortings whose List Wallets page read the same ids from both tables. */
  sameOrders: number;
  from: string;
  to: string;
}

const CURRENCIES = ['usd', 'eur', 'gbp', 'jpy', 'chf', 'cad', 'aud', 'sek', 'nok', 'dkk'];
const S = (value: string): AttributeValue => ({ S: value });

function adminOn(client: DynamoDBClient, table: string, clock: () => Date): AdminContext {
  return {
    table: {
      doc: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }),
      name: table,
    },
    now: clock,
    webhooks: { keyring: staticKeyring(newKeySetDocument()), addresses: { allowLoopback: false } },
  };
}

async function scanAll(
  client: DynamoDBClient,
  table: string,
  filter?: string,
): Promise<Record<string, AttributeValue>[]> {
  const items: Record<string, AttributeValue>[] = [];
  let ExclusiveStartKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: table,
        ConsistentRead: true,
        ...(filter
          ? { FilterExpression: filter, ExpressionAttributeValues: { ':wallet': S('wallet') } }
          : {}),
        ...(ExclusiveStartKey ? { ExclusiveStartKey } : {}),
      }),
    );
    items.push(...(page.Items ?? []));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
}

export async function rehearseMigration(
  client: DynamoDBClient,
  options: RehearsalOptions = {},
): Promise<RehearsalResult> {
  const say = options.say ?? (() => {});
  const suffix = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const from = options.from ?? `migration-old-${suffix}`;
  const to = options.to ?? `migration-new-${suffix}`;
  const created: string[] = [];
  const work = mkdtempSync(join(tmpdir(), 'migrate-table-'));
  try {
    if (!options.from) {
      await ensureTable(client, from, { stream: false, definition: legacyTableDefinition });
      created.push(from);
    }
    if (!options.to) {
      await ensureTable(client, to, { stream: false });
      created.push(to);
    }
    const ctx = adminOn(client, from, () => new Date());

    // 1. The old table, filled by the services' own writes, wallets as the old insertWallet wrote them.
    const demo = await seedDemo(ctx, 'http://rehearsal.invalid');
    for (let c = 0; c < (options.customers ?? 20); c++) {
      const customer = await createCustomer(ctx, {
        organizationId: demo.organization_id,
        email: `migration-${c}@rehearsal.example`,
        name: `Customer ${c}`,
      });
      const wallets = Math.min(options.walletsEach ?? 6, CURRENCIES.length * 2);
      await Promise.all(
        Array.from({ length: wallets }, (_, w) =>
          createWallet(ctx, {
            customer,
            currency: CURRENCIES[Math.floor(w / 2)] as string,
            type: w % 2 === 0 ? 'usage' : 'billing',
            // Ties on balance, negatives: the orders have something to break.
            balance: ((c * 7 + w * 13) % 9) - 3,
          }),
        ),
      );
    }
    const walletItems = await scanAll(client, from, 'entity = :wallet');
    for (const wallet of walletItems) {
      const sortKeys = legacyWalletSortKeys({
        id: wallet.id?.S as string,
        created_at: wallet.created_at?.S as string,
        balance: Number(wallet.balance?.N),
      });
      await client.send(
        new UpdateItemCommand({
          TableName: from,
          Key: { PK: wallet.PK as AttributeValue, SK: wallet.SK as AttributeValue },
          UpdateExpression: `SET ${Object.keys(sortKeys)
            .map((name) => `${name} = :${name}`)
            .join(', ')}`,
          ExpressionAttributeValues: Object.fromEntries(
            Object.entries(sortKeys).map(([name, value]) => [`:${name}`, S(value)]),
          ),
        }),
      );
    }
    const filled = (await scanAll(client, from)).length;
    say(
      `old table ${from} (five local indexes): ${filled} items from the demo seed and ${options.customers ?? 20} more customers; ${walletItems.length} wallets carry the five LSI sort keys`,
    );

    // 2. The copy, interrupted and resumed from its checkpoint.
    const checkpoint = join(work, 'checkpoint.json');
    const segments = options.segments ?? 4;
    const interruptedAfter = 3;
    try {
      await copyTable({
        client,
        from,
        to,
        segments,
        checkpoint,
        pageLimit: 50,
        stopAfterPages: interruptedAfter,
      });
      throw new Error('the copy was to be interrupted and was not');
    } catch (error) {
      if (!(error instanceof CopyInterrupted)) throw error;
    }
    const resumed = await copyTable({ client, from, to, segments, checkpoint, pageLimit: 50 });
    say(
      `copy: interrupted after ${interruptedAfter} pages, resumed from the checkpoint (${resumed.resumed ? 'resumed' : 'NOT resumed'}): ${resumed.copiedInAll} items written in ${segments} parallel segments`,
    );

    // 3. Live traffic on the old table meanwhile: by then today's code serves it (the first deploy of
    // the procedure), so the late wallet comes without the retired sort keys, as it would.
    const late = await createCustomer(ctx, {
      organizationId: demo.organization_id,
      email: 'late@rehearsal.example',
    });
    await createWallet(ctx, { customer: late, currency: 'usd', type: 'usage', balance: 5 });
    const [existing] = walletItems;
    // A copied item removed from the old table (a session ended, as TTL removes it).
    const session = keys.token(hashSecret(demo.second_customer_session_token));
    await client.send(
      new DeleteItemCommand({ TableName: from, Key: { PK: S(session.PK), SK: S(session.SK) } }),
    );
    const drifted = await verifyTables(client, from, to, segments);
    say(
      `writes during the copy (a customer and its wallet created, a session deleted): ${verificationLine(drifted)}`,
    );

    // 4. The catch-up pass, then the check.
    const sync = await syncTable({
      client,
      from,
      to,
      segments,
      keyNames: [tableDefinition.partitionKey.name, tableDefinition.sortKey.name],
    });
    say(`catch-up: ${sync.put} items put again, ${sync.deleted} deleted, ${sync.unchanged} unchanged`);
    const final = await verifyTables(client, from, to, segments);
    say(`verify: ${verificationLine(final)}`);

    // 5. List Wallets' reader, on both tables: the copied wallets keep their order.
    const customerId = existing?.customer_id?.S ?? demo.customer_id;
    let sameOrders = 0;
    const old = adminOn(client, from, () => new Date()).table;
    const moved = adminOn(client, to, () => new Date()).table;
    for (const sorting of [[], ...SORTING_VALUES.map((value) => [value])]) {
      const criteria = parseSorting(sorting);
      const page = async (table: typeof old) =>
        (await listWalletPage(table, customerId, criteria, 0, WALLETS_PER_CUSTOMER_MAX)).map((w) => w.id);
      const [a, b] = await Promise.all([page(old), page(moved)]);
      if (a.length > 0 && JSON.stringify(a) === JSON.stringify(b)) sameOrders++;
    }
    say(
      `List Wallets on the new table: ${sameOrders} of ${SORTING_VALUES.length + 1} sortings give the old table's wallets in the same order`,
    );

    return {
      filled,
      wallets: walletItems.length,
      interruptedAfter,
      drifted,
      sync,
      final,
      sameOrders,
      from,
      to,
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
    for (const table of created) await deleteTable(client, table);
  }
}
