/**
 * The local API as `npm start` serves it (same server, handlers, IAM proxy and seed), for the e2e
 * suites: on the run's shared DynamoDB Local (globalSetup), in a table of its own, under the policies
 * globalSetup synthesised once. `test/e2e/npm-start.test.ts` still runs `npm start` itself, with its
 * own DynamoDB Local and synthesis, as a newcomer would.
 */
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { addMember, createPersonalAccessToken, createUser } from '#scripts/admin/commands.ts';
import { deleteTable } from '#scripts/local/create-table.ts';
import { freePort } from '#scripts/local/dynamodb-local.ts';
import { type LocalStack, type LocalStackOptions, startLocalStack } from '#scripts/local/stack.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import {
  dynamodbEndpoint,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  stackPolicies,
  testWebhooks,
} from './dynamodb.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The e2e project's shared local API (test/support/e2e-stack.ts): what its files read of it. */
    sharedLocalApi: Pick<LocalStack, 'demo' | 'keySet'>;
  }
}

/**
 * The 1.x client's request timeout in the e2e files, in seconds. Its default, 5 s, is a race with a
 * loaded machine (a registration aborted at load 14 in a run of the fast tier beside three others);
 * this is a deadline for a hang, as the tests' own.
 */
export const SDK_TIMEOUT_SECONDS = 120;

/**
 * The local API the e2e project's global setup started (test/support/e2e-stack.ts), shared by the
 * files that need the stack as `npm start` configures it: each makes its own customers, clients and
 * tokens in it. Stopping it is the setup's; `stop` here does nothing. A file that needs other options
 * (a clock timer, CORS origins, no pipeline) starts its own with `startLocalApi`.
 */
export function sharedLocalApi(): Pick<LocalStack, 'demo' | 'keySet' | 'stop'> {
  return { ...inject('sharedLocalApi'), stop: async () => {} };
}

export async function startLocalApi(
  prefix: string,
  options: Partial<Omit<LocalStackOptions, 'dynamodbEndpoint' | 'tableName'>> = {},
): Promise<LocalStack> {
  const endpoint = dynamodbEndpoint();
  // A port found free can be taken by another process before the server listens on it (suites run
  // in parallel, and other runs may share the machine): a lost race is retried on a new port, in a
  // table of its own.
  for (let attempt = 1; ; attempt++) {
    const tableName = `${prefix}-${randomBytes(4).toString('hex')}`;
    try {
      return withTableDropped(
        await startLocalStack({
          port: await freePort(),
          quiet: true,
          policies: options.policies ?? stackPolicies(),
          // The clock's timer runs only where a test asks for it (test/e2e/subscription-clock.test.ts).
          scheduleIntervalMs: 0,
          // No quotas unless a suite is about them (test/e2e/quotas.test.ts passes small ones): the
          // suites send many requests with one token, and every quota write is one more record on
          // the local stream the relay reads (deployed, its filter drops them), which delayed the
          // subscription counts the SDK list suites page by (sdk-v0.test.ts, a run with them on).
          quotas: false,
          ...options,
          dynamodbEndpoint: endpoint,
          tableName,
        }),
        endpoint,
        tableName,
      );
    } catch (error) {
      await dropTable(endpoint, tableName);
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt === 3) throw error;
    }
  }
}

async function dropTable(endpoint: string, tableName: string): Promise<void> {
  const admin = new DynamoDBClient({ region: LOCAL_REGION, endpoint, credentials: LOCAL_CREDENTIALS });
  try {
    await deleteTable(admin, tableName);
  } finally {
    admin.destroy();
  }
}

function withTableDropped(stack: LocalStack, endpoint: string, tableName: string): LocalStack {
  return {
    ...stack,
    stop: async () => {
      await stack.stop();
      await dropTable(endpoint, tableName);
    },
  };
}

/**
 * A personal access token of a new member of the demo organization with exactly `scope`, minted as
 * the operator CLI mints one (`npm run admin -- --local token create`): for a suite that needs a
 * narrower credential than the demo's every-scope token (a `webhooks:read` reader).
 */
export async function scopedToken(
  stack: Pick<LocalStack, 'demo' | 'keySet'>,
  scope: string,
): Promise<string> {
  const { demo } = stack;
  const admin = {
    table: { doc: createDocumentClient({ endpoint: demo.dynamodb_endpoint }), name: demo.table_name },
    now: () => new Date(),
    webhooks: testWebhooks(stack.keySet),
  };
  const user = await createUser(admin, { email: `scoped-${randomBytes(6).toString('hex')}@x.example` });
  await addMember(admin, demo.organization_id, user.id);
  return (await createPersonalAccessToken(admin, { userId: user.id, scope })).token;
}
