/**
 * The route table: one entry per operation (= one Lambda function).
 *
 * Read by the CDK stack (routes, function entries, IAM grants) and by the local
 * runner (routing HTTP requests to the same handlers), so both serve exactly the
 * same routes. Plain data only: no SDK or CDK imports.
 */
import { indexNames } from './data/table.ts';

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

/** DynamoDB actions a function may need; the stack grants exactly these. */
export type TableAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:BatchGetItem'
  | 'dynamodb:Query'
  | 'dynamodb:PutItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:DeleteItem'
  | 'dynamodb:ConditionCheckItem';

export interface OperationDefinition {
  /** Folder under `functions/`, also the function's logical name. */
  name: string;
  method: HttpMethod;
  /** Every path spelling served directly (the contract serves both trailing-slash forms). */
  paths: string[];
  /** Path relative to the repository root. */
  entry: string;
  access: {
    actions: TableAction[];
    /** Index names the function queries (their ARNs are granted, nothing else). */
    indexes: string[];
    /** Partition-key prefixes the function may touch (IAM `dynamodb:LeadingKeys`). */
    leadingKeys: string[];
  };
}

export const operations = [
  {
    name: 'create-client',
    method: 'POST',
    paths: ['/v1/oauth2/register', '/v1/oauth2/register/'],
    entry: 'functions/create-client/handler.ts',
    access: {
      actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
      indexes: [],
      leadingKeys: ['TOKEN#*', 'OAUTHCLIENT#*', 'IDEMPOTENCY#*'],
    },
  },
  {
    name: 'create-subscription',
    method: 'POST',
    paths: ['/v1/subscriptions', '/v1/subscriptions/'],
    entry: 'functions/create-subscription/handler.ts',
    access: {
      actions: [
        'dynamodb:GetItem',
        'dynamodb:BatchGetItem',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'dynamodb:DeleteItem',
        'dynamodb:ConditionCheckItem',
      ],
      indexes: [],
      leadingKeys: ['TOKEN#*', 'PRODUCT#*', 'CUSTOMER#*', 'SUBSCRIPTION#*', 'IDEMPOTENCY#*'],
    },
  },
  {
    name: 'list-wallets',
    method: 'GET',
    paths: ['/v1/customer-portal/wallets', '/v1/customer-portal/wallets/'],
    entry: 'functions/list-wallets/handler.ts',
    access: {
      actions: ['dynamodb:GetItem', 'dynamodb:Query'],
      indexes: [
        indexNames.walletByCreated,
        indexNames.walletByBalanceCreated,
        indexNames.walletByBalanceCreatedDesc,
        indexNames.walletByBalance,
        indexNames.walletByBalanceDesc,
      ],
      leadingKeys: ['TOKEN#*', 'CUSTOMER#*'],
    },
  },
  {
    name: 'delete-webhook-endpoint',
    method: 'DELETE',
    paths: ['/v1/webhooks/endpoints/{id}', '/v1/webhooks/endpoints/{id}/'],
    entry: 'functions/delete-webhook-endpoint/handler.ts',
    access: {
      actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      indexes: [],
      leadingKeys: ['TOKEN#*', 'WEBHOOK#*'],
    },
  },
] as const satisfies readonly OperationDefinition[];

export type OperationName = (typeof operations)[number]['name'];

/**
 * The route paths API Gateway declares for an operation. HTTP APIs refuse a
 * route path ending in `/`, and match `/a/` to the `/a` route, so one route per
 * spelling pair is declared; the local router serves both spellings directly.
 */
export function routePaths(operation: Pick<OperationDefinition, 'paths'>): string[] {
  return [...new Set(operation.paths.map((path) => (path.length > 1 ? path.replace(/\/+$/, '') : path)))];
}

export const TABLE_NAME_ENV = 'TABLE_NAME';
