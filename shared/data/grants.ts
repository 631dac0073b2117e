/**
 * What a data-access function needs of the table, as IAM grants. Each module of `shared/data/`
 * exports `access`: the grants of the calls its functions issue, next to those functions. Each
 * operation's service composes the grants of the data functions it uses (`operationAccess`), and
 * `npm run generate` writes them into the route table (`shared/generated/operations.ts`), which the
 * stack grants exactly. Plain data only: no SDK import, so the stack and the generator can read it.
 */
import type { Partition } from './table.ts';

/** DynamoDB actions a function may need; the stack grants exactly these. */
export type TableAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:BatchGetItem'
  | 'dynamodb:Query'
  | 'dynamodb:PutItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:DeleteItem'
  | 'dynamodb:ConditionCheckItem';

/**
 * One IAM statement: these actions, on the table (or only on the named indexes), for items whose
 * partition key matches one of `leadingKeys` (`ForAllValues:StringLike dynamodb:LeadingKeys`).
 *
 * IAM evaluates a request against each statement on its own, and a BatchGetItem's leading keys are
 * all the partition keys it reads: a batch of PRODUCT#, CUSTOMER# and ORG# keys needs one statement
 * that allows all three prefixes. Reads and writes are separate grants so that reading an item
 * never implies writing it.
 */
export interface TableGrant {
  actions: readonly TableAction[];
  /** Partitions (`shared/data/table.ts` `partitions`), granted as `dynamodb:LeadingKeys` patterns `<prefix>*`. */
  leadingKeys: readonly Partition[];
  /** When set, the grant covers only these indexes (their ARNs), not the table itself. */
  indexes?: readonly string[];
}

/** A data module's grants, per function (or per transaction it writes). */
export type DataAccess = Readonly<Record<string, readonly TableGrant[]>>;

/** Everything one function may do: its table grants, in statement order, and the webhook key set. */
export interface FunctionAccess {
  readonly table: readonly TableGrant[];
  /**
   * The function seals or opens webhook signing secrets: the stack grants it
   * `secretsmanager:GetSecretValue` on the webhook key set and passes the set's name
   * (`WEBHOOK_KEY_SET_ID_ENV`); locally only these functions are given the key set.
   */
  readonly webhookKeySet?: true;
}

/** A service's declarations: one per operation it serves, keyed by the OpenAPI `operationId`. */
export type OperationAccess = Readonly<Record<string, FunctionAccess>>;

const sameList = (a: readonly string[] = [], b: readonly string[] = []): boolean =>
  a.length === b.length && a.every((value, index) => value === b[index]);

/**
 * One statement from several single-statement grants with the same actions and indexes (calls the
 * policy grants together, e.g. the token and the customer both read with GetItem): their partitions
 * joined in order. Throws when the grants differ in anything but their partitions.
 */
export function oneStatement(...grants: readonly (readonly TableGrant[])[]): TableGrant {
  const statements = grants.flat();
  const [first] = statements;
  if (!first) throw new Error('oneStatement: no grant');
  for (const statement of statements) {
    if (!sameList(statement.actions, first.actions) || !sameList(statement.indexes, first.indexes))
      throw new Error(`oneStatement: ${JSON.stringify(statement)} differs from ${JSON.stringify(first)}`);
  }
  return {
    ...first,
    leadingKeys: [...new Set(statements.flatMap((statement) => statement.leadingKeys))],
  };
}
