/**
 * The real handlers, in process: `createHandler(deps)` of each functions/<op>/handler.ts.
 * Handler modules also wire production dependencies when they load (as on Lambda), which needs
 * TABLE_NAME and a region; `benchEnvironment()` provides placeholders first.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { type OperationName, operations } from '#shared/operations.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { FakeTable, fakeDocumentClient, type RecordedCall } from './fake-table.ts';
import { benchWebhooks, fixtureItems } from './fixture.ts';
import { operationCases } from './samples.ts';

export type Handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

export function benchEnvironment(): void {
  process.env.TABLE_NAME ??= 'bench';
  process.env.WEBHOOK_KEY_SET_ID ??= 'bench';
  process.env.DELIVERY_QUEUE_URL ??= 'http://in-process.local/deliveries';
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  // Lambda runs Node 22, where the SDK has nothing to warn about.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
}

const remaining = () => 10_000;

/**
 * A fresh context per invocation, as the Lambda runtime gives (middleware may keep per-request
 * state on it: the idempotency middleware does).
 */
export const lambdaContext = (deadline = true): Context =>
  ({
    awsRequestId: 'bench',
    functionName: 'bench',
    ...(deadline ? { getRemainingTimeInMillis: remaining } : {}),
  }) as Context;

export async function handlerFactory(name: OperationName): Promise<(deps: Dependencies) => Handler> {
  benchEnvironment();
  const operation = operations.find((op) => op.name === name);
  if (!operation) throw new Error(`unknown operation ${name}`);
  const module = (await import(`../../${operation.entry}`)) as { createHandler(deps: Dependencies): Handler };
  return module.createHandler;
}

/** The DynamoDB commands one successful request of the operation sends, in order. */
export async function recordCalls(name: OperationName): Promise<RecordedCall[]> {
  const calls: RecordedCall[] = [];
  const table = new FakeTable(fixtureItems());
  const deps: Dependencies = {
    table: { doc: fakeDocumentClient(table, (call) => calls.push(structuredClone(call))), name: 'bench' },
    now: () => new Date(),
    webhooks: benchWebhooks,
  };
  const handler = (await handlerFactory(name))(deps);
  const c = operationCases.find((x) => x.name === name);
  if (!c) throw new Error(`no case for ${name}`);
  // The handler's request line (one per operation) would bury the report; the bench reads its calls.
  const log = console.log;
  console.log = () => {};
  const result = await handler(c.event(), lambdaContext()).finally(() => {
    console.log = log;
  });
  if (result.statusCode !== c.status)
    throw new Error(`${name} answered ${result.statusCode}: ${result.body}`);
  return calls;
}
