/**
 * IAM's answer to one DynamoDB request on the wire, for one function: the request's target header and
 * body become request contexts (`evaluate.ts`), each judged against the function's statements from the
 * synthesised template. The loopback proxy (`proxy.ts`) judges with it the requests other processes
 * send; `npm start`'s in-process clients (`in-process.ts`) judge the very same bytes before they leave.
 */

import { tableDefinition } from '#shared/data/table.ts';
import {
  type Decision,
  decide,
  type KeySchema,
  type RequestContext,
  type ResolvedStatement,
  requestContexts,
  UnsupportedRequest,
} from './evaluate.ts';
import { type ResolveContext, resolve, type StackPolicies, tableArn } from './policy.ts';

export const LOCAL_ACCOUNT_ID = '123456789012';
export const LOCAL_PARTITION = 'aws';

export interface Verdict {
  functionName: string;
  target: string;
  context: RequestContext;
  decision: Decision;
}

export interface IamJudgeOptions {
  tableName: string;
  policies: StackPolicies;
  region: string;
  /** Every authorisation decision (allowed or not), e.g. to see which grants a run used. */
  onVerdict?: (verdict: Verdict) => void;
}

/** What DynamoDB answers a refused request: HTTP 400, JSON 1.0 protocol. */
export interface Refusal {
  status: number;
  body: string;
}

export interface IamJudge {
  /** Undefined when every context of the request is allowed; else the error DynamoDB would answer. */
  judge(functionName: string, target: string, body: Buffer | string): Refusal | undefined;
  /** Refusals so far, newest last. */
  denials: Verdict[];
  /** The functions it knows, by name. */
  functions: readonly string[];
}

const keySchema: KeySchema = {
  partitionKey: tableDefinition.partitionKey.name,
  indexPartitionKeys: Object.fromEntries(
    tableDefinition.indexes.map((index) => [index.name, index.partitionKey.name]),
  ),
};

function awsError(type: string, message: string): Refusal {
  return {
    status: 400,
    body: JSON.stringify({ __type: `com.amazon.coral.service#${type}`, message }),
  };
}

interface Role {
  name: string;
  role: string;
  statements: ResolvedStatement[];
}

const localResolveContext = (policies: StackPolicies, tableName: string, region: string): ResolveContext => ({
  region,
  accountId: LOCAL_ACCOUNT_ID,
  partition: LOCAL_PARTITION,
  tableLogicalId: policies.tableLogicalId,
  tableName,
});

/**
 * The statements a function's requests are judged by: its policy resolved against a concrete table.
 * Pure, and the judge's own: `decide()` over these judges a recorded request context offline exactly
 * as the judge did live (the IAM suite's "no more than needed" check does so under mutated policies,
 * without re-running any handler).
 */
export function resolvedStatements(
  policies: StackPolicies,
  functionName: string,
  table: { tableName: string; region: string },
): ResolvedStatement[] {
  const fn = policies.functions[functionName];
  if (!fn) throw new Error(`the stack has no function named ${functionName}`);
  const context = localResolveContext(policies, table.tableName, table.region);
  return fn.statements.map((s) => ({ ...s, Resource: resolve(s.Resource, context) }));
}

export function createIamJudge(options: IamJudgeOptions): IamJudge {
  const resolveContext = localResolveContext(options.policies, options.tableName, options.region);
  const arnOf = (table: string) => (table.startsWith('arn:') ? table : tableArn(resolveContext, table));
  const denials: Verdict[] = [];
  // Each function's statements resolved against the table once, not per request.
  const roles = new Map<string, Role>(
    Object.entries(options.policies.functions).map(([name, fn]) => [
      name,
      {
        name,
        role: fn.roleLogicalId,
        statements: resolvedStatements(options.policies, name, options),
      },
    ]),
  );

  function judge(functionName: string, target: string, body: Buffer | string): Refusal | undefined {
    const fn = roles.get(functionName);
    if (!fn) throw new Error(`the stack has no function named ${functionName}`);
    let contexts: RequestContext[];
    try {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      contexts = requestContexts(target, JSON.parse(text || '{}'), arnOf, keySchema);
    } catch (error) {
      if (error instanceof UnsupportedRequest || error instanceof SyntaxError) {
        return awsError('ValidationException', `IAM simulator cannot judge this request: ${error.message}`);
      }
      throw error;
    }
    for (const context of contexts) {
      const decision = decide(fn.statements, context);
      const verdict: Verdict = { functionName: fn.name, target, context, decision };
      options.onVerdict?.(verdict);
      if (!decision.allowed) {
        denials.push(verdict);
        const principal = `arn:${LOCAL_PARTITION}:sts::${LOCAL_ACCOUNT_ID}:assumed-role/${fn.role}/${fn.name}`;
        const why = decision.explicit
          ? 'with an explicit deny in an identity-based policy'
          : `because no identity-based policy allows the ${context.action} action`;
        return awsError(
          'AccessDeniedException',
          `User: ${principal} is not authorized to perform: ${context.action} on resource: ${context.resource} ${why}`,
        );
      }
    }
    return undefined;
  }

  return { judge, denials, functions: [...roles.keys()] };
}
