/**
 * IAM as the deployed stack grants it: each function's policy statements, read from a synthesised
 * CloudFormation template (not from `shared/operations.ts`, which the template is built from: a
 * mistake in the stack code would otherwise be checked against itself).
 *
 * Statements are kept with their intrinsic functions (`Fn::GetAtt` of the table, `Fn::Join` of
 * index ARNs) and resolved against a concrete table when a proxy starts, so one synthesis serves
 * every table of a test run.
 */

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation template JSON is untyped.
type Json = any;

export interface RawStatement {
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: Json;
  NotResource?: Json;
  Condition?: Record<string, Record<string, string | string[]>>;
}

/** What the proxy needs to know of a stack: its table, and each function's role and statements. */
export interface StackPolicies {
  tableLogicalId: string;
  /** By function name (the operation name for API functions). */
  functions: Record<string, { roleLogicalId: string; statements: RawStatement[] }>;
}

export interface FunctionRole {
  /** Logical id of the function's `AWS::IAM::Role`. */
  roleLogicalId: string;
}

const refersTo = (roles: Json, roleLogicalId: string): boolean =>
  Array.isArray(roles) && roles.some((role) => role?.Ref === roleLogicalId);

/**
 * Every statement that applies to each function's role: the role's inline policies, and every
 * `AWS::IAM::Policy` attached to it. Managed policies cannot be read from a template; a role with one
 * is refused rather than guessed at.
 */
export function policiesFromTemplate(
  template: { Resources: Record<string, { Type: string; Properties?: Json }> },
  tableLogicalId: string,
  functions: Record<string, FunctionRole>,
): StackPolicies {
  const resources = template.Resources;
  if (resources[tableLogicalId]?.Type !== 'AWS::DynamoDB::Table') {
    throw new Error(`${tableLogicalId} is not a DynamoDB table in this template`);
  }
  const out: StackPolicies = { tableLogicalId, functions: {} };
  for (const [name, { roleLogicalId }] of Object.entries(functions)) {
    const role = resources[roleLogicalId];
    if (role?.Type !== 'AWS::IAM::Role') throw new Error(`${name}: ${roleLogicalId} is not an IAM role`);
    if ((role.Properties?.ManagedPolicyArns ?? []).length > 0) {
      throw new Error(`${name}: managed policies cannot be simulated from a template`);
    }
    const statements: RawStatement[] = [];
    for (const inline of role.Properties?.Policies ?? []) statements.push(...inline.PolicyDocument.Statement);
    for (const resource of Object.values(resources)) {
      if (resource.Type === 'AWS::IAM::Policy' && refersTo(resource.Properties?.Roles, roleLogicalId)) {
        statements.push(...resource.Properties.PolicyDocument.Statement);
      }
    }
    out.functions[name] = { roleLogicalId, statements: structuredClone(statements) };
  }
  return out;
}

export interface ResolveContext {
  region: string;
  accountId: string;
  partition: string;
  tableLogicalId: string;
  tableName: string;
}

export const tableArn = (ctx: Omit<ResolveContext, 'tableLogicalId'>, tableName = ctx.tableName): string =>
  `arn:${ctx.partition}:dynamodb:${ctx.region}:${ctx.accountId}:table/${tableName}`;

/** A value no ARN equals: what a reference to anything but the table resolves to. */
const UNRESOLVED = (value: Json) => `<unresolved ${JSON.stringify(value)}>`;

/** Resolves the intrinsic functions CDK writes in policy resources. */
export function resolve(value: Json, ctx: ResolveContext): Json {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map((item) => resolve(item, ctx));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  if (keys.length !== 1) return UNRESOLVED(value);
  const [fn] = keys as [string];
  const arg = value[fn];
  switch (fn) {
    case 'Ref':
      if (arg === 'AWS::Region') return ctx.region;
      if (arg === 'AWS::AccountId') return ctx.accountId;
      if (arg === 'AWS::Partition') return ctx.partition;
      if (arg === 'AWS::URLSuffix') return 'amazonaws.com';
      return arg === ctx.tableLogicalId ? ctx.tableName : UNRESOLVED(value);
    case 'Fn::GetAtt':
      return arg[0] === ctx.tableLogicalId && arg[1] === 'Arn' ? tableArn(ctx) : UNRESOLVED(value);
    case 'Fn::Join': {
      const [separator, parts] = arg as [string, Json[]];
      return parts.map((part) => String(resolve(part, ctx))).join(separator);
    }
    default:
      return UNRESOLVED(value);
  }
}
