/**
 * `Idempotency-Key` on POST operations: a retry with the same key, by the same
 * credential, within 24 hours gets the first answer (status, headers, body)
 * and creates nothing; the same key with another body is a 422; of concurrent
 * requests with one key exactly one runs, the others get 409.
 *
 * Stored answers can hold secrets (a client secret), so they are sealed with a
 * key derived from the caller's bearer token and the idempotency key: the table
 * alone cannot open them, the caller's retry can.
 */
import { createHash } from 'node:crypto';
import type middy from '@middy/core';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey } from '../data/idempotency.ts';
import type { Key } from '../data/table.ts';
import { keys } from '../data/table.ts';
import { canonicalJson } from '../domain/canonical-json.ts';
import { IdempotencyKeyInUse, RequestValidationError } from '../domain/errors.ts';
import { open, seal } from '../domain/secret-box.ts';
import { hashSecret } from '../domain/secrets.ts';
import { markIdempotentReplay } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { bearerToken } from './auth.ts';
import type { ApiResult } from './responses.ts';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;
/** Longer than the function timeout (10 s): an unfinished claim older than this belongs to a dead attempt. */
const LEASE_MS = 30_000;
const VALID_KEY = /^[\x20-\x7E]{1,255}$/;

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/**
 * What identifies "the same request": its canonical JSON (object keys sorted), so key order and
 * whitespace do not matter. A body nested too deeply to serialise (an ignored unknown field) is
 * hashed by an iterative walk instead, in a prefix encoding (container sizes first, every
 * primitive terminated) so that different bodies cannot encode alike.
 */
function requestDigest(body: unknown): string {
  try {
    return sha256(canonicalJson(body)).toString('hex');
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
  }
  const hash = createHash('sha256');
  const stack: { value: unknown; key?: string }[] = [{ value: body }];
  while (stack.length > 0) {
    const { value, key } = stack.pop() as { value: unknown; key?: string };
    if (key !== undefined) hash.update(`${JSON.stringify(key)}:`);
    if (Array.isArray(value)) {
      hash.update(`[${value.length}:`);
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i] });
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
        a < b ? 1 : a > b ? -1 : 0,
      );
      hash.update(`{${entries.length}:`);
      for (const [k, v] of entries) stack.push({ value: v, key: k });
    } else {
      hash.update(`${JSON.stringify(value) ?? 'null'},`);
    }
  }
  return hash.digest('hex');
}

const headerIssue = (msg: string, type: string, input: string) =>
  new RequestValidationError([{ loc: ['header', 'Idempotency-Key'], msg, type, input }]);

interface Claimed {
  key: Key;
  requestHash: string;
  sealingKey: Buffer;
  /** The record's expiry (epoch seconds), which the parts of a large answer share. */
  expiresAt: number;
}

type Request = middy.Request<APIGatewayProxyEventV2, ApiResult, Error, Context>;

/** The claim of one request, per event object (a Lambda context may be shared in process; an event is not). */
const claims = new WeakMap<APIGatewayProxyEventV2, Claimed>();

export function idempotency(
  deps: Dependencies,
  scope: string,
): middy.MiddlewareObj<APIGatewayProxyEventV2, ApiResult> {
  return {
    before: async (raw) => {
      const request = raw as unknown as Request;
      const value = request.event.headers?.[IDEMPOTENCY_HEADER];
      if (value === undefined) return;
      if (!VALID_KEY.test(value)) {
        throw headerIssue(
          'Idempotency-Key must be 1 to 255 printable ASCII characters',
          'string_pattern_mismatch',
          value,
        );
      }
      const token = bearerToken(request.event.headers?.authorization);
      const key = keys.idempotency(scope, sha256(`${hashSecret(token)}\n${value}`).toString('hex'));
      const requestHash = requestDigest(request.event.body);
      const sealingKey = sha256(`idempotent-response\n${token}\n${value}`);

      const now = deps.now();
      const claim = await claimIdempotencyKey(deps.table, {
        key,
        requestHash,
        now,
        leaseMs: LEASE_MS,
        ttlSeconds: IDEMPOTENCY_TTL_SECONDS,
      });
      switch (claim.outcome) {
        case 'claimed':
          claims.set(request.event, {
            key,
            requestHash,
            sealingKey,
            expiresAt: Math.floor(now.getTime() / 1000) + IDEMPOTENCY_TTL_SECONDS,
          });
          return;
        case 'replay':
          markIdempotentReplay();
          return JSON.parse(open(claim.sealedResponse, sealingKey)) as ApiResult;
        case 'in_progress':
          throw new IdempotencyKeyInUse();
        case 'mismatch':
          throw headerIssue(
            'This Idempotency-Key was already used with a different request',
            'idempotency_key_reused',
            value,
          );
      }
    },
    after: async (raw) => {
      const request = raw as unknown as Request;
      const claimed = claims.get(request.event);
      claims.delete(request.event);
      if (!claimed || !request.response) return;
      try {
        await completeIdempotencyKey(
          deps.table,
          claimed.key,
          claimed.requestHash,
          seal(JSON.stringify(request.response), claimed.sealingKey),
          claimed.expiresAt,
        );
      } catch (error) {
        // The work is done and the answer is ready: failing it now would invite a duplicate on retry.
        // The claim stays in progress until its lease ends.
        console.error(
          JSON.stringify({
            level: 'warn',
            message: 'idempotency record not completed',
            name: (error as Error).name,
          }),
        );
      }
    },
    onError: async (raw) => {
      const request = raw as unknown as Request;
      const claimed = claims.get(request.event);
      if (!claimed) return;
      claims.delete(request.event);
      await releaseIdempotencyKey(deps.table, claimed.key, claimed.requestHash).catch(() => undefined);
    },
  };
}
