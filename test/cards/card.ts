/**
 * One card per function: everything the test suites need to know about one operation (or one
 * scheduled or pipeline function) that cannot be derived from the route table.
 *
 * A card names its function; method, path and credential kind come from the route table
 * (`shared/generated/operations.ts`), never from the card. `test/cards/index.ts` finds the cards by
 * reading this folder, and `test/unit/cards.test.ts` requires exactly one per function.
 *
 * A new operation needs one card file here: its sample request (the bench's, the SAM suites' and
 * `events/<name>.json`'s), its IAM scenario, its isolation row and its DynamoDB-work cases (the
 * suites that have not moved yet keep their own tables; see the optional slots below).
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
  /**
   * Reserved for test/integration/faults.test.ts (not moved yet): its `faultOps[name]`, i.e.
   * `{ success, calls, prepare }` (the success status, the DynamoDB calls of a successful request in
   * order, and the request with the table check to make after it). `prepare` builds a request whose
   * method and url could come from `sample`'s parts and the route table; it needs the suite's world,
   * given like `isolation`'s fixture.
   */
  faults?: never;
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
  /**
   * Reserved for the fuzz suites (not moved yet): `fuzzArbitraries(ctx)[operationId]` of
   * test/support/fuzz.ts (the arbitrary of its requests and oracles, given the suite's context) and
   * the statuses table of test/integration/fuzz.test.ts (`satisfies Record<OperationId, number[]>`).
   */
  fuzz?: never;
}

export type Card<N extends FunctionName = FunctionName> = N extends OperationName
  ? OperationCard<N>
  : FunctionCardBase<N>;

/** Types a card: an operation's must carry every slot an operation needs. */
export const defineCard = <const N extends FunctionName>(card: Card<N> & { name: N }): Card<N> => card;
