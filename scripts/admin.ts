/**
 * `npm run admin -- <entity> create [options]`: operator commands against a
 * table. Targets the running `npm start` with `--local` (reads .local/demo.json),
 * else `TABLE_NAME` with the standard AWS credential chain (and
 * `AWS_ENDPOINT_URL_DYNAMODB` if set). Secrets are printed once; only hashes or
 * ciphertext are stored. Webhook secrets are sealed with the webhook key set:
 * `.local/webhook-keys.json` with `--local`, else the stack's Secrets Manager secret
 * (`WEBHOOK_KEY_SET_ID`, the stack output `WebhookKeySetName`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { getCustomer } from '#shared/data/catalog.ts';
import { migrateCustomerGuards } from '#shared/data/customer-guard-migration.ts';
import { migrateCustomerLists } from '#shared/data/customer-list-migration.ts';
import { migrateDeliveryLog } from '#shared/data/delivery-log-migration.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import { migrateProductLists } from '#shared/data/product-list-migration.ts';
import type { WalletType, WebhookFormat } from '#shared/data/records.ts';
import { migrateSubscriptionLists } from '#shared/data/subscription-list-migration.ts';
import { rotateStoredKeySet, secretsManagerKeyring } from '#shared/data/webhook-keys.ts';
import { noKeyring, staticKeyring } from '#shared/domain/keyring.ts';
import type { RecurringInterval } from '#shared/domain/period.ts';
import { ALL_SCOPES } from '#shared/domain/scopes.ts';
import { presentWebhookEndpoint } from '#shared/services/presenters.ts';
import { resealWebhookSecrets } from '#shared/services/webhook-endpoints.ts';
import * as commands from './admin/commands.ts';

const USAGE = `Usage: npm run admin -- [--local] <command> [options]

  org create       --name NAME [--currency usd]
  user create      --email EMAIL [--org ORG_ID]
  member add       --org ORG_ID --user USER_ID
  member remove    --org ORG_ID --user USER_ID   (the user's tokens lose the organization at once)
  token create     --user USER_ID [--scope "a b" | --all-scopes] [--expires-in-days N (default 30, at most 365)]
                   [--comment TEXT]
  token list       --user USER_ID                (ids, scopes, expiry, status; never a token)
  token revoke     --user USER_ID --id TOKEN_ID  (refused from the next request)
  customer create  --org ORG_ID --email EMAIL [--name NAME] [--external-id ID]
  customer migrate-lists
                   every customer created before the sharded customer lists moved into its shard
                   (run once after deploying them; safe to interrupt and run again)
  customer migrate-guards
                   every customer's e-mail and external-id guards moved out of its organization's
                   partition, its unread GSI1 keys removed, then each organization marked
                   (run once after deploying it; safe to interrupt and run again)
  product create   --org ORG_ID --name NAME [--interval day|week|month|year|none] [--interval-count N]
                   [--price CENTS] [--currency usd] [--archived]
  product migrate-lists
                   every product listed before the sharded product lists moved into its shard
                   (run once after deploying them; safe to interrupt and run again)
  subscription migrate-lists
                   every subscription written before the sharded organization and product lists
                   moved into its shards (run once after deploying them; safe to interrupt and run again)
  wallet create    --customer CUSTOMER_ID --currency CUR [--type usage|billing] [--balance CENTS]
  webhook create   --org ORG_ID --url https://… [--name NAME] [--format raw|discord|slack]
  webhook rotate-keys [--reseal-only]
                   a new key-set version made current, then every stored signing secret
                   re-sealed under it (the stack's key set: WEBHOOK_KEY_SET_ID + TABLE_NAME)
  webhook migrate-delivery-log
                   the delivery log's entries written before its sharded layout entered in it,
                   then the old entries, counts and tombstones deleted (run once after deploying it;
                   a second run changes nothing)
  session create   --customer CUSTOMER_ID [--ttl-seconds 3600]

Target: --local (the running npm start), else TABLE_NAME + AWS credentials.`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    local: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
    name: { type: 'string' },
    currency: { type: 'string' },
    email: { type: 'string' },
    org: { type: 'string' },
    user: { type: 'string' },
    scope: { type: 'string' },
    'all-scopes': { type: 'boolean', default: false },
    'expires-in-days': { type: 'string' },
    comment: { type: 'string' },
    'external-id': { type: 'string' },
    interval: { type: 'string' },
    'interval-count': { type: 'string' },
    price: { type: 'string' },
    archived: { type: 'boolean', default: false },
    customer: { type: 'string' },
    type: { type: 'string' },
    balance: { type: 'string' },
    url: { type: 'string' },
    format: { type: 'string' },
    'ttl-seconds': { type: 'string' },
    'reseal-only': { type: 'boolean', default: false },
    id: { type: 'string' },
  },
});

function fail(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
}

const need = (name: keyof typeof values): string => {
  const value = values[name];
  if (typeof value !== 'string' || value === '') fail(`--${name} is required`);
  return value;
};

const integer = (name: keyof typeof values, fallback: number): number => {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value)) fail(`--${name} must be an integer`);
  return value;
};

function context(): commands.AdminContext {
  let endpoint = process.env.AWS_ENDPOINT_URL_DYNAMODB;
  let tableName = process.env.TABLE_NAME;
  if (values.local) {
    if (!existsSync('.local/demo.json')) fail('--local needs a running `npm start` (no .local/demo.json)');
    const demo = JSON.parse(readFileSync('.local/demo.json', 'utf8'));
    endpoint = demo.dynamodb_endpoint;
    tableName = demo.table_name;
    process.env.AWS_REGION ??= 'us-east-1';
    process.env.AWS_ACCESS_KEY_ID ??= 'local';
    process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  }
  if (!tableName) fail('set TABLE_NAME (or use --local)');
  // The running npm start's key set, or the stack's (its WebhookKeySetName output).
  const keyArn = process.env.WEBHOOK_KEY_SET_ID;
  const keyring =
    values.local && existsSync('.local/webhook-keys.json')
      ? staticKeyring(readFileSync('.local/webhook-keys.json', 'utf8'))
      : keyArn
        ? secretsManagerKeyring(keyArn)
        : noKeyring;
  return {
    table: { doc: createDocumentClient(endpoint ? { endpoint } : {}), name: tableName },
    now: () => new Date(),
    // npm start lets endpoints point at loopback; a deployed table never does.
    webhooks: { keyring, addresses: { allowLoopback: values.local ?? false } },
  };
}

async function customerArg(ctx: commands.AdminContext) {
  const customer = await getCustomer(ctx.table, need('customer'));
  if (!customer) fail(`customer ${values.customer} not found`);
  return customer;
}

async function main(): Promise<unknown> {
  const [entity, verb] = positionals;
  if (values.help || !entity) fail('');
  const ctx = context();
  switch (`${entity} ${verb ?? ''}`.trim()) {
    case 'org create':
      return commands.createOrganization(ctx, {
        name: need('name'),
        defaultCurrency: values.currency ?? 'usd',
      });
    case 'user create': {
      const user = await commands.createUser(ctx, { email: need('email') });
      if (values.org) await commands.addMember(ctx, values.org, user.id);
      return user;
    }
    case 'member add':
      await commands.addMember(ctx, need('org'), need('user'));
      return { organization_id: values.org, user_id: values.user };
    case 'member remove': {
      const removed = await commands.removeMember(ctx, need('org'), need('user'));
      if (!removed) fail(`user ${values.user} is no member of ${values.org}`);
      return { organization_id: values.org, user_id: values.user, removed };
    }
    case 'token create': {
      const days = values['expires-in-days'] === undefined ? undefined : integer('expires-in-days', 0);
      try {
        const { token, record } = await commands.createPersonalAccessToken(ctx, {
          userId: need('user'),
          scope: values['all-scopes'] ? ALL_SCOPES.join(' ') : (values.scope ?? ''),
          ...(days === undefined ? {} : { expiresAt: new Date(ctx.now().getTime() + days * 86_400_000) }),
          comment: values.comment ?? '',
        });
        return { token, note: 'shown once; only its hash is stored', ...record };
      } catch (error) {
        if (error instanceof commands.TokenLifetimeRefused) fail(`--expires-in-days: ${error.message}`);
        throw error;
      }
    }
    case 'token list':
      return commands.listPersonalAccessTokensOf(ctx, need('user'));
    case 'token revoke': {
      const revoked = await commands.revokePersonalAccessTokenOf(ctx, need('user'), need('id'));
      if (!revoked) fail(`user ${values.user} has no token ${values.id}`);
      return revoked;
    }
    case 'customer create':
      return commands.createCustomer(ctx, {
        organizationId: need('org'),
        email: need('email'),
        ...(values.name ? { name: values.name } : {}),
        ...(values['external-id'] ? { externalId: values['external-id'] } : {}),
      });
    case 'product create': {
      const interval = values.interval ?? 'month';
      if (!['day', 'week', 'month', 'year', 'none'].includes(interval))
        fail('--interval must be day|week|month|year|none');
      return commands.createProduct(ctx, {
        organizationId: need('org'),
        name: need('name'),
        recurringInterval: interval === 'none' ? null : (interval as RecurringInterval),
        recurringIntervalCount: integer('interval-count', 1),
        priceAmount: integer('price', 0),
        currency: values.currency ?? 'usd',
        archived: values.archived ?? false,
      });
    }
    case 'wallet create': {
      const type = values.type ?? 'usage';
      if (type !== 'usage' && type !== 'billing') fail('--type must be usage or billing');
      return commands.createWallet(ctx, {
        customer: await customerArg(ctx),
        currency: need('currency'),
        type: type as WalletType,
        balance: integer('balance', 0),
      });
    }
    case 'webhook rotate-keys': {
      // npm start makes its key set per run (or keeps it in --data-dir): nothing to rotate there.
      if (values.local) fail("rotate-keys works on a deployed stack's key set, not --local");
      const keySetId = process.env.WEBHOOK_KEY_SET_ID;
      if (!keySetId) fail('set WEBHOOK_KEY_SET_ID to the stack output WebhookKeySetName');
      const rotated = values['reseal-only']
        ? undefined
        : await rotateStoredKeySet(keySetId, new SecretsManagerClient({}));
      const report = await resealWebhookSecrets(ctx);
      return {
        ...(rotated ? { rotated_to: rotated } : {}),
        ...report,
        note:
          report.skipped.length > 0
            ? 'some endpoints kept changing: run again with --reseal-only'
            : 'every secret is sealed under the current version; older versions may leave the key set',
      };
    }
    case 'customer migrate-lists':
      return migrateCustomerLists(ctx.table);
    case 'customer migrate-guards':
      return migrateCustomerGuards(ctx.table);
    case 'product migrate-lists':
      return migrateProductLists(ctx.table);
    case 'subscription migrate-lists':
      return migrateSubscriptionLists(ctx.table);
    case 'webhook migrate-delivery-log':
      return migrateDeliveryLog(ctx.table, ctx.now());
    case 'webhook create': {
      if (ctx.webhooks.keyring === noKeyring)
        fail('set WEBHOOK_KEY_SET_ID to the stack output WebhookKeySetName (or use --local)');
      const { endpoint, secret } = await commands.createWebhookEndpoint(ctx, {
        organizationId: need('org'),
        url: need('url'),
        ...(values.name ? { name: values.name } : {}),
        format: (values.format ?? 'raw') as WebhookFormat,
      });
      return {
        ...presentWebhookEndpoint(endpoint, secret),
        note: 'stored encrypted; Get Webhook Endpoint shows it too',
      };
    }
    case 'session create': {
      const { token, record } = await commands.createCustomerSession(ctx, {
        customer: await customerArg(ctx),
        ttlSeconds: integer('ttl-seconds', commands.CUSTOMER_SESSION_TTL_SECONDS),
      });
      return { token, note: 'shown once; only its hash is stored', ...record };
    }
    default:
      return fail(`unknown command: ${positionals.join(' ')}`);
  }
}

try {
  console.log(JSON.stringify(await main(), null, 2));
} catch (error) {
  console.error(`admin: ${(error as Error).message}`);
  process.exit(1);
}
