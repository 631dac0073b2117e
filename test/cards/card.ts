/**
 * One card per function: everything the test suites need to know about one operation (or one
 * scheduled or pipeline function) that cannot be derived from the route table.
 *
 * A card names its function; method, path and credential kind come from the route table
 * (`shared/generated/operations.ts`), never from the card. `test/cards/index.ts` finds the cards by
 * reading this folder, and `test/unit/cards.test.ts` requires exactly one per function.
 *
 * A new operation needs one card file here: its sample request (the bench's, the SAM suites',
 * `events/<name>.json`'s and the fault suites' default case), its IAM scenario, its isolation row and
 * its DynamoDB-work cases. Nothing else is written per operation for the test suites; what some
 * operations carry beyond their card is optional and keyed by operation where the suite lives:
 * - the fault suites (test/support/fault-operations.ts `faultOps`): a request on the demo data and
 *   the table check after a fault, where the default (the card's sample, its calls recorded, the
 *   contract checked) cannot tell a half-written change: required there for a sample that makes
 *   more than one write call;
 * - the fuzz suites (test/support/fuzz.ts `handModels`, `touched`; test/integration/fuzz.test.ts
 *   `handReach`): a model of the operation's rules and writes, where the document's model (requests
 *   from its OpenAPI entry, the contract's statuses) is not enough: required for an operation that
 *   writes, or that authenticates otherwise than by a bearer token;
 * - the warm benchmark's bare baseline (test/bench/warm.ts `bareHandler`).
 */

import type { ExpectStatic } from 'vitest';
import type { OperationName, PipelineFunctionName, ScheduledFunctionName } from '#shared/operations.ts';
import type { DynamoCase } from '#test/bench/work-kit.ts';
import type { HttpReply } from '#test/support/contract.ts';
import type { Scenario } from '#test/support/iam-kit.ts';
import type { IsolationRow } from '#test/support/isolation-kit.ts';

export type FunctionName = OperationName | ScheduledFunctionName | PipelineFunctionName;

/**
 * The operation's example request, against the bench fixture's data (test/bench/fixture.ts): its
 * parts only. Method and path come from the route table, and the credential from its kind there
 * (a personal access token, a customer session, the fixture client's registration token, or the
 * client's own credentials in the form); `token` only when it is another one.
 */
export interface Sample {
  /** What the request shows, as the bench's tables name it. */
  label: string;
  /** The status it answers. */
  status: number;
  /** The path's parameters, by the OpenAPI template's names. */
  params?: Record<string, string>;
  /** The query string, without its `?`. */
  query?: string;
  /** The JSON body, or a function giving a fresh one per request. */
  body?: unknown;
  /** A form body (the OAuth endpoints); an `oauth_client` operation gets the client's credentials added. */
  form?: Record<string, string>;
  /** A credential other than its kind's fixture one. */
  token?: string;
}

/** What every function's card has: its name and its IAM scenario (test/support/iam-scenarios.ts). */
interface FunctionCardBase<N extends FunctionName> {
  name: N;
  /** Every path of it that touches the table, step by step, with what its full grant must answer. */
  iam: Scenario;
}

/**
 * What the SAM suites (test/infra/sam.test.ts, bundles.test.ts) check of the operation's bundle
 * invoked with its sample, beyond what they check of every operation (the sample's status, an
 * answer the document lists, an empty 204, one request line whose units match the function's
 * grants). The event is `events/<name>.json`, generated from `sample` (scripts/sample-events.ts).
 */
export interface SamChecks {
  /**
   * The answer's own checks, against the fixture's data (test/bench/fixture.ts). `expect` is handed
   * in: a card is loaded outside vitest too (the bench, `npm run generate`).
   */
  check?: (reply: HttpReply, expect: ExpectStatic) => void;
  /** `false`: this sample's success changes nothing, though the function may write. */
  writes?: false;
}

/** An operation's card. */
export interface OperationCard<N extends OperationName = OperationName> extends FunctionCardBase<N> {
  sample: Sample;
  /** Optional: the SAM suites' checks of this sample's answer beyond the generic ones. */
  sam?: SamChecks;
  /** Its row of the isolation matrix (test/integration/isolation.test.ts). */
  isolation: IsolationRow;
  /** Its DynamoDB-work cases (test/bench/dynamo-work.ts): round trips against a target; at least one. */
  dynamoWork: readonly [DynamoCase, ...DynamoCase[]];
}

export type Card<N extends FunctionName = FunctionName> = N extends OperationName
  ? OperationCard<N>
  : FunctionCardBase<N>;

/** Types a card: an operation's must carry every slot an operation needs. */
export const defineCard = <const N extends FunctionName>(card: Card<N> & { name: N }): Card<N> => card;
