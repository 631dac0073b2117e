/**
 * Each operation's sample request (its card's `sample`, test/cards/<operation>.ts) as the API
 * Gateway event its function receives, against the fixture's data (test/bench/fixture.ts): method,
 * path and credential kind from the route table, the rest from the card.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { type OperationName, operations } from '#shared/operations.ts';
import { operationCards, type Sample } from '#test/cards/index.ts';
import { buildEvent, CLIENT_ID, CLIENT_SECRET, PAT, REGISTRATION_TOKEN, SESSION } from './fixture.ts';

export interface OperationCase {
  name: OperationName;
  label: string;
  /** The answer's status. */
  status: number;
  event: () => APIGatewayProxyEventV2;
}

type Operation = (typeof operations)[number];

/** The fixture's credential of each kind the route table names. */
const fixtureTokens: Record<Operation['credential'], string | undefined> = {
  personal_access_token: PAT,
  customer_session: SESSION,
  registration_access_token: REGISTRATION_TOKEN,
  // In the form, not a header.
  oauth_client: undefined,
};

/** The sample as a request: the route table's method and path, its parameters filled in, its credential. */
export interface SampleRequest {
  method: string;
  /** Path and query string. */
  url: string;
  token?: string;
  body?: unknown;
  /** A form body, the client's credentials added for an `oauth_client` operation. */
  form?: Record<string, string>;
}

export function sampleRequest(operation: Operation, sample: Sample): SampleRequest {
  const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = sample.params?.[name];
    if (value === undefined) throw new Error(`${operation.name}: its sample names no ${name}`);
    return value;
  });
  const body = typeof sample.body === 'function' ? (sample.body as () => unknown)() : sample.body;
  const form =
    sample.form && operation.credential === 'oauth_client'
      ? { ...sample.form, client_id: CLIENT_ID, client_secret: CLIENT_SECRET }
      : sample.form;
  const token = sample.token ?? fixtureTokens[operation.credential];
  return {
    method: operation.method,
    url: sample.query === undefined ? path : `${path}?${sample.query}`,
    ...(token === undefined ? {} : { token }),
    ...(body === undefined ? {} : { body }),
    ...(form === undefined ? {} : { form }),
  };
}

/** The sample's event, as API Gateway gives it to the function. */
export function sampleEvent(operation: Operation, sample: Sample): APIGatewayProxyEventV2 {
  const { method, url, ...options } = sampleRequest(operation, sample);
  return buildEvent(method, url, options);
}

const cards = await operationCards();

/** One request per operation, against `fixtureItems()`; every operation has one (its card's). */
export const operationCases: OperationCase[] = operations.map((operation, i) => {
  const { sample } = cards[i] as (typeof cards)[number];
  return {
    name: operation.name,
    label: sample.label,
    status: sample.status,
    event: () => sampleEvent(operation, sample),
  };
});
