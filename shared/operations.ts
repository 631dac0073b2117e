/**
 * The route table: one entry per operation (= one Lambda function), and the functions behind no
 * route.
 *
 * Nothing here is written per operation: method, path, function name and scopes come from the
 * OpenAPI document, each function's table grants from the `operationAccess` its service declares
 * (composed of the `access` patterns of `shared/data/`), and `npm run generate` joins them into
 * `shared/generated/operations.ts`. Read by the CDK stack (routes, function entries, IAM grants) and by
 * the local runner (routing HTTP requests to the same handlers), so both serve exactly the same
 * routes. Plain data only: no SDK or CDK imports.
 */
import type { TableGrant } from './data/grants.ts';
import type { HttpMethod } from './document-functions.ts';
import { functionAccess, operations as generatedOperations } from './generated/operations.ts';

export type { TableAction, TableGrant } from './data/grants.ts';
export {
  apiReference,
  type DocumentFunction,
  documentFunctions,
  type HttpMethod,
  oauthDiscovery,
  routeNotFound,
} from './document-functions.ts';
export { operationRoutes } from './generated/operations.ts';

export interface OperationDefinition {
  /** Folder under `functions/`, also the function's logical name (`x-function`, or the operationId in kebab-case). */
  name: string;
  /** The OpenAPI document's `operationId` (the official SDKs' method names derive from it). */
  operationId: string;
  method: HttpMethod;
  /** The path as the official clients call it (the OpenAPI key); the other trailing-slash spelling is served too. */
  path: string;
  /** Path relative to the repository root. */
  entry: string;
  /** The operation's `security` scopes, any one of which is enough; empty: none required. */
  scopes: readonly string[];
  /** Everything the function may do in the table; the stack grants exactly this. */
  access: readonly TableGrant[];
  /**
   * The function seals or opens webhook signing secrets: the stack grants it
   * `secretsmanager:GetSecretValue` on the webhook key set and passes the set's name
   * (`WEBHOOK_KEY_SET_ID_ENV`); locally only these functions are given the key set.
   */
  webhookKeySet?: true;
}

export const operations = generatedOperations satisfies readonly OperationDefinition[];

/**
 * A function no route reaches: a schedule invokes it. Its table grants are judged like an
 * operation's (IAM scenario and mutations keyed by its name).
 */
export interface ScheduledFunctionDefinition {
  name: string;
  entry: string;
  /** EventBridge schedule expression. */
  schedule: string;
  /** Longer than an operation's 10 s: a run works through batches while time is left. */
  timeoutSeconds: number;
  access: readonly TableGrant[];
}

export const scheduledFunctions = [
  {
    name: 'subscription-clock',
    entry: 'functions/subscription-clock/handler.ts',
    // Every minute: a period ends at most about a minute late, and a missed or failed run is
    // simply taken up by the next (each change is conditioned on the state it was decided on).
    schedule: 'rate(1 minute)',
    timeoutSeconds: 60,
    // shared/services/subscription-clock.ts `functionAccess`.
    access: functionAccess['subscription-clock'].access,
  },
] as const satisfies readonly ScheduledFunctionDefinition[];

export type ScheduledFunctionName = (typeof scheduledFunctions)[number]['name'];

export type OperationName = (typeof operations)[number]['name'];

/**
 * The stream pipelines' functions, behind no route: the webhook relay (triggered by the table's
 * stream), the deliverer (triggered by the delivery queue) and the meter aggregator (the table's
 * stream, usage events only). Their table grants are judged like the operations'.
 */
export const pipelineFunctions = [
  {
    name: 'webhook-relay',
    entry: 'functions/webhook-relay/handler.ts',
    // shared/webhooks/relay.ts `functionAccess`.
    access: functionAccess['webhook-relay'].access,
  },
  {
    name: 'webhook-deliverer',
    entry: 'functions/webhook-deliverer/handler.ts',
    // shared/webhooks/deliver.ts `functionAccess`.
    access: functionAccess['webhook-deliverer'].access,
    webhookKeySet: functionAccess['webhook-deliverer'].webhookKeySet,
  },
  {
    // Usage events into customer meters: its own mapping, so that ingest never delays webhooks.
    name: 'meter-aggregator',
    entry: 'functions/meter-aggregator/handler.ts',
    // shared/services/meter-aggregation.ts `functionAccess`.
    access: functionAccess['meter-aggregator'].access,
  },
] as const satisfies readonly {
  name: string;
  entry: string;
  access: readonly TableGrant[];
  webhookKeySet?: true;
}[];
export type PipelineFunctionName = (typeof pipelineFunctions)[number]['name'];
export type OperationId = (typeof operations)[number]['operationId'];

/** The route table's entry for an OpenAPI operation id. */
export const operationById = (operationId: OperationId) =>
  operations.find((operation) => operation.operationId === operationId) as (typeof operations)[number];

export { routedPaths } from './routed-paths.ts';

/**
 * The functions given the ID Token keys: the token endpoint signs with the current key, the
 * discovery function publishes the JWKS. Deployed: `kms:Sign` and `kms:GetPublicKey` (infra/stack.ts).
 */
export const idTokenKeyUsers = { sign: ['request-token'], publish: ['oauth-discovery'] } as const;

export const usesIdTokenKeys = (name: string): boolean =>
  [...idTokenKeyUsers.sign, ...idTokenKeyUsers.publish].includes(name as never);

/** Whether a function (an operation's, or the pipeline's) is given the webhook key set. */
export const usesWebhookKeySet = (name: string): boolean =>
  [...operations, ...pipelineFunctions].some(
    (definition) => definition.name === name && 'webhookKeySet' in definition,
  );
