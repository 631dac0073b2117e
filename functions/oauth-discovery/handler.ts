import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { RouteNotFound, ServiceUnavailable } from '#shared/domain/errors.ts';
import type { IdTokenKeys } from '#shared/domain/id-token.ts';
import { type ApiResult, errorResult, json } from '#shared/http/responses.ts';
import { GREEDY_PARAMETER } from '#shared/http/routes.ts';
import { kmsIdTokenKeysFromEnv } from '#shared/oauth/kms-keys.ts';
import { observed } from '#shared/observability/observed.ts';
import { logError, markError } from '#shared/observability/telemetry.ts';
import { type Dependencies, issuerOf, optionalIssuer } from '#shared/runtime.ts';
import { authorizationServerMetadata, JWKS_PATH } from '#shared/services/oauth-metadata.ts';

/** Public and the same for every caller: caches may keep it an hour. */
const CACHEABLE = { 'Cache-Control': 'public, max-age=3600' };

/**
 * Both well-known metadata documents (RFC 8414, OpenID Connect Discovery 1.0) and the JWKS
 * (RFC 7517) the ID Tokens are verified with: no credential, no table. The issuer is the stage's
 * configured one, whatever `Host` the request names.
 */
export const createHandler = (deps: Pick<Dependencies, 'issuer' | 'idTokenKeys'>) =>
  observed(async (event: APIGatewayProxyEventV2): Promise<ApiResult> => {
    // The greedy twin serves the trailing slash; a longer path names no document.
    if (event.pathParameters?.[GREEDY_PARAMETER]) {
      const error = new RouteNotFound();
      markError(String(error.body.error));
      return errorResult(error);
    }
    try {
      if (event.rawPath.replace(/\/$/, '') === JWKS_PATH) {
        const keys = deps.idTokenKeys as IdTokenKeys | undefined;
        if (!keys) throw new Error('the discovery function was given no ID Token keys');
        return json(200, await keys.jwks(), CACHEABLE);
      }
      return json(200, authorizationServerMetadata(issuerOf(deps)), CACHEABLE);
    } catch (error) {
      // A key store out of reach or a stage without its configuration: said in the log, not in the answer.
      const { name, message } = error as Error;
      logError('discovery document unavailable', { name, message });
      const unavailable = new ServiceUnavailable();
      markError(String(unavailable.body.error));
      return errorResult(unavailable);
    }
  });

export const handler = createHandler({ ...optionalIssuer(), idTokenKeys: kmsIdTokenKeysFromEnv() });
