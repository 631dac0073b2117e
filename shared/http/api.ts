/**
 * The one middleware stack every function uses, in middy's documented order:
 * error handler registered first (its onError runs last) → authenticate →
 * content type and size → JSON body parser (UTF-8, I-JSON) → validate → handler.
 * The OAuth endpoints that take a form (RFC 6749 §3.2) read it before authenticating the client,
 * whose credentials may be in it: content type and size → form → client authentication → validate.
 * Validators are precompiled (shared/generated); nothing is compiled here.
 */
import middy from '@middy/core';
import httpErrorHandler from '@middy/http-error-handler';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import {
  ApiError,
  internalErrorBody,
  OAuthError,
  PayloadTooLarge,
  RequestValidationError,
  ResourceNotFound,
  RouteNotFound,
  UnsupportedMediaType,
} from '../domain/errors.ts';
import type { ClientAuthMethod } from '../domain/oauth.ts';
import type {
  BearerCredential,
  ClientPrincipal,
  CredentialKind,
  CustomerPrincipal,
  Principal,
  RegistrationPrincipal,
  UserPrincipal,
} from '../domain/principals.ts';
import { CLIENT_ADDRESS_HEADER_ENV } from '../env.ts';
import { shadowedPathVariables } from '../generated/routes.ts';
import type { QueryShape } from '../generated/validators.js';
import { observed } from '../observability/observed.ts';
import { logError, markError } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { authenticate } from './auth.ts';
import { authenticateClient } from './client-auth.ts';
import { formBody } from './form-body.ts';
import { idempotency } from './idempotency.ts';
import { iJsonBody, strictUtf8Body } from './json-body.ts';
import { parseQuery } from './query.ts';
import { bucketsOf, enforce } from './quota.ts';
import type { ApiResult } from './responses.ts';
import { GREEDY_PARAMETER, templateOfRouteKey } from './routes.ts';
import { type RequestPart, toIssues, type Validator } from './validation.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;.*)?$/i;

export type PrincipalFor<K extends CredentialKind> = K extends 'customer_session'
  ? CustomerPrincipal
  : K extends 'registration_access_token'
    ? RegistrationPrincipal
    : K extends 'oauth_client'
      ? ClientPrincipal
      : UserPrincipal;

export interface ApiRequest<K extends CredentialKind, Body, Query, Path> {
  principal: PrincipalFor<K>;
  body: Body;
  query: Query;
  path: Path;
  headers: Record<string, string | undefined>;
  /** The query string as sent, for operations that read it themselves (repeated parameters). */
  rawQuery: string;
  deps: Dependencies;
}

/**
 * What an operation declares. Body, query and path types are inferred from the generated validators
 * (`StandaloneValidateFunction<T>` is a `Validator<T>`), so a handler restates none of them.
 */
export interface ApiOptions<K extends CredentialKind, Body, Query, Path> {
  deps: Dependencies;
  credential: K;
  /** Any one of these scopes is enough; empty: no scope required. */
  scopes: readonly string[];
  body?: Validator<Body>;
  /**
   * The body is `application/x-www-form-urlencoded` (RFC 6749 §3.2), not JSON: read by
   * `shared/http/form-body.ts`, and every fault of the body answered as RFC 6749 `invalid_request`.
   */
  form?: boolean;
  /** With `credential: 'oauth_client'`: the client authentication methods the endpoint accepts. */
  clientAuthMethods?: readonly ClientAuthMethod[];
  /**
   * With `credential: 'personal_access_token'`: whether an OAuth access token may stand for the
   * user (default yes). The user's own consent takes a personal access token only.
   */
  oauthAccessTokens?: boolean;
  /** The query's validator and shape (`validate<Op>Query`, `<op>QueryShape`, both generated). */
  query?: { validate: Validator<Query>; shape: QueryShape };
  path?: Validator<Path>;
  /** Honour `Idempotency-Key`, with records scoped to this name (POST operations). */
  idempotencyScope?: string;
  /** Headers every error answer carries too (successes set their own, so that replays keep them). */
  errorHeaders?: Record<string, string>;
}

type Request = middy.Request<APIGatewayProxyEventV2, ApiResult, Error, Context>;

/**
 * What the middlewares learn about one request, for the handler. Kept per event object, not on the
 * Lambda context: a context may be shared by concurrent invocations (in process, in tests), an
 * event never is.
 */
interface RequestState {
  principal?: Principal;
  parsed?: Partial<Record<RequestPart, unknown>>;
}
const requestState = new WeakMap<APIGatewayProxyEventV2, RequestState>();
const stateOf = (event: APIGatewayProxyEventV2): RequestState => {
  let state = requestState.get(event);
  if (!state) {
    state = {};
    requestState.set(event, state);
  }
  return state;
};

/** A path naming another family's literal where this route takes a variable: that family's unknown resource. */
function refuseShadowed(event: APIGatewayProxyEventV2): void {
  const template = templateOfRouteKey(event.routeKey ?? '');
  // Path variables another route names literally (generated from the route table).
  const shadowed = Object.hasOwn(shadowedPathVariables, template)
    ? shadowedPathVariables[template]
    : undefined;
  for (const [name, literals] of Object.entries(shadowed ?? {})) {
    const value = event.pathParameters?.[name];
    if (value !== undefined && literals.includes(value)) throw new ResourceNotFound();
  }
}

function check(validator: Validator, part: RequestPart, data: unknown): unknown {
  if (!validator(data)) throw new RequestValidationError(toIssues(validator.errors ?? [], part, data));
  return data;
}

/** A form parameter off its schema is RFC 6749's `invalid_request`, naming the parameter. */
function checkForm(validator: Validator, data: unknown): unknown {
  if (validator(data)) return data;
  const [first] = toIssues(validator.errors ?? [], 'body', data);
  const name = first?.loc[1];
  throw new OAuthError('invalid_request', name ? `${name}: ${first?.msg}.` : 'The form is malformed.');
}

/**
 * The caller's address: deployed behind CloudFront, the viewer's address CloudFront sets
 * (`CloudFront-Viewer-Address`, `ip:port`; the front door is the only way in, so no client can set
 * it); anywhere else, the connection's source address as API Gateway saw it.
 */
function sourceAddress(event: APIGatewayProxyEventV2): string {
  const header = process.env[CLIENT_ADDRESS_HEADER_ENV];
  const viewer = header ? event.headers?.[header] : undefined;
  if (viewer) return viewer.replace(/:\d+$/, '');
  return event.requestContext?.http?.sourceIp ?? 'unknown';
}

/** Logs what an operator needs for a 5xx and nothing else: no event, no headers, no body. */
function logUnexpected(error: unknown): void {
  const status = (error as ApiError).statusCode;
  if (status !== undefined && status < 500) return;
  const { name, message, stack } = error as Error;
  logError('unexpected error', { name, message, stack });
}

export function api<K extends CredentialKind, Body = undefined, Query = undefined, Path = undefined>(
  options: ApiOptions<K, Body, Query, Path>,
  handler: (request: ApiRequest<K, Body, Query, Path>) => Promise<ApiResult>,
) {
  const { deps } = options;
  // No early-timeout race: it costs a timer per invocation, and a request still running near the
  // 10 s function timeout has failed either way (test/bench: warm overhead).
  const stack = middy<APIGatewayProxyEventV2, ApiResult, Error, Context>({ timeoutEarlyInMillis: 0 });
  const { errorHeaders } = options;
  if (errorHeaders) {
    // Registered before the error handler, so that its onError runs after the answer exists.
    stack.use({
      onError: async (request: Request) => {
        if (request.response) request.response.headers = { ...request.response.headers, ...errorHeaders };
      },
    });
  }
  stack
    .use(httpErrorHandler({ logger: logUnexpected, fallbackMessage: JSON.stringify(internalErrorBody) }))
    .use({
      // Runs before the error handler answers: the contract's error code is the metric's error type
      // (class names do not survive minification).
      onError: async (request: Request) => {
        const error = request.error as ApiError | null;
        const code = error instanceof ApiError ? error.body.error : undefined;
        markError(typeof code === 'string' ? code : 'InternalError');
      },
    })
    .use({
      onError: async (request: Request) => {
        // The body parser reports unparsable JSON as 415; the contract says 422.
        const cause = (request.error as { cause?: { package?: string } } | null)?.cause;
        if (cause?.package === '@middy/http-json-body-parser') {
          request.error = new RequestValidationError([
            { loc: ['body'], msg: 'JSON decode error', type: 'json_invalid', input: {} },
          ]);
        }
      },
    })
    .use({
      // The greedy twin of this operation's route (shared/http/routes.ts) catches the trailing-slash
      // spelling, and with it any longer path: that is an unknown route, answered before anything
      // else, as the `$default` function answers every other unknown path.
      before: async (request: Request) => {
        if (request.event.pathParameters?.[GREEDY_PARAMETER]) throw new RouteNotFound();
      },
    });
  const authenticating = {
    before: async (request: Request) => {
      const { credential } = options;
      const { headers, pathParameters, body } = request.event;
      stateOf(request.event).principal =
        credential === 'oauth_client'
          ? await authenticateClient(
              deps,
              headers?.authorization,
              body as unknown as Record<string, unknown>,
              options.clientAuthMethods ?? [],
            )
          : await authenticate(
              deps,
              headers?.authorization,
              credential as BearerCredential,
              options.scopes,
              pathParameters,
              { oauthAccessTokens: options.oauthAccessTokens ?? true },
            );
    },
  };
  const { quotas } = deps;
  // The OAuth client endpoints count per source address before anything is read: a client's
  // credentials are checked only within the address's quota (shared/http/quota.ts).
  if (quotas && options.credential === 'oauth_client') {
    stack.use({
      before: async (request: Request) =>
        enforce(quotas, [['address', `ip:${sourceAddress(request.event)}`]]),
    });
  }
  // Once the caller is known, its credential and tenant (or its client) count the request.
  const counting = quotas && {
    before: async (request: Request) => {
      const { principal } = stateOf(request.event);
      if (principal) await enforce(quotas, bucketsOf(principal));
    },
  };
  // A client may authenticate in the form (client_secret_post, none): the form is read first.
  if (options.credential !== 'oauth_client') {
    stack.use(authenticating);
    if (counting) stack.use(counting);
  }

  if (options.form) {
    stack.use(formBody(MAX_BODY_BYTES));
  } else if (options.body) {
    stack
      .use({
        before: async (request: Request) => {
          const { headers, body, isBase64Encoded } = request.event;
          if (!JSON_MEDIA_TYPE.test(headers?.['content-type'] ?? '')) throw new UnsupportedMediaType();
          const size = body === undefined ? 0 : Buffer.byteLength(body, isBase64Encoded ? 'base64' : 'utf8');
          if (size > MAX_BODY_BYTES) throw new PayloadTooLarge(MAX_BODY_BYTES);
        },
      })
      .use(strictUtf8Body())
      // The content type was checked above; disableContentTypeCheck is honoured at runtime in
      // @middy/http-json-body-parser 6 but is missing from its type declarations.
      .use(httpJsonBodyParser({ disableContentTypeCheck: true } as Parameters<typeof httpJsonBodyParser>[0]))
      .use(iJsonBody());
  }

  if (options.credential === 'oauth_client') {
    stack.use(authenticating);
    if (counting) stack.use(counting);
  }

  stack.use({
    before: async (request: Request) => {
      const parsed: Partial<Record<RequestPart, unknown>> = {};
      refuseShadowed(request.event);
      if (options.path) {
        const { [GREEDY_PARAMETER]: _greedy, ...pathParameters } = request.event.pathParameters ?? {};
        parsed.path = check(options.path, 'path', pathParameters);
      }
      if (options.query) {
        parsed.query = check(
          options.query.validate,
          'query',
          parseQuery(request.event.rawQueryString ?? '', options.query.shape),
        );
      }
      if (options.body) {
        parsed.body = options.form
          ? checkForm(options.body, request.event.body)
          : check(options.body, 'body', request.event.body);
      }
      stateOf(request.event).parsed = parsed;
    },
  });

  if (options.idempotencyScope) stack.use(idempotency(deps, options.idempotencyScope));

  const handled = stack.handler(async (event) => {
    const { principal, parsed } = stateOf(event);
    if (!principal) throw new Error('authentication middleware did not run');
    return handler({
      principal: principal as PrincipalFor<K>,
      body: parsed?.body as Body,
      query: parsed?.query as Query,
      path: parsed?.path as Path,
      headers: event.headers ?? {},
      rawQuery: event.rawQueryString ?? '',
      deps,
    });
  });
  return observed(handled, (event) => requestState.get(event)?.principal);
}
