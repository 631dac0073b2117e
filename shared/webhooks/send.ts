/**
 * One delivery attempt over HTTP: POST the exact payload with its signed headers, within a deadline,
 * following no redirect, to an address the guard accepted at connect time.
 *
 * The address check runs inside the socket's own DNS lookup: the addresses the connection uses are
 * the ones that were checked, so a name that resolves to a public address when an endpoint is saved
 * and to 169.254.169.254 at send time (DNS rebinding) is refused at send time.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { addressGuard } from './address-guard.ts';

export interface Attempt {
  /** The answer's status, or null when none came (refused address, DNS, connection, timeout). */
  status: number | null;
  durationMs: number;
  /** At most `SNIPPET_BYTES` of the answer's body, as text. */
  snippet: string;
  /**
   * Why there was no answer, in words the endpoint's owner reads in the delivery log: `address
   * refused` (our rule), `invalid URL`, `unsupported scheme`, or `no answer` for every network fault
   * alike (refused, reset, unreachable, DNS, TLS, timeout), so that the log tells no one whether a
   * port is closed, filtered or open. `not sent: circuit open`: the endpoint kept failing, and
   * this attempt was taken without a network call (`circuit.ts`).
   */
  error: string | null;
  /** The network fault behind `no answer` (`ECONNREFUSED`, `timeout`, …): for the operator's log only. */
  cause: string | null;
  /** A 2xx: nothing else counts as delivered (a 3xx is not followed and is a failure). */
  delivered: boolean;
}

export const SNIPPET_BYTES = 1024;
/** The one public reason for every network fault (see `Attempt.error`). */
export const NO_ANSWER = 'no answer';
/**
 * An attempt's deadline: a receiver has this long to answer (the Standard Webhooks guidance asks
 * receivers to answer quickly and do the work later). Short, so that a receiver that never answers
 * holds a deliverer no longer than this before its circuit opens (`circuit.ts`).
 */
export const DEFAULT_TIMEOUT_MS = 5_000;
/** The delivery log's reason for an attempt the endpoint's open circuit kept from going out. */
export const CIRCUIT_OPEN = 'not sent: circuit open';

/** Decides whether an address may be connected to: false refuses the attempt. */
export type AddressGuard = (address: string, family: number) => boolean;

export class RefusedAddress extends Error {
  constructor(host: string) {
    super(`the address of ${host} is not allowed`);
    this.name = 'RefusedAddress';
  }
}

/** A lookup that resolves as usual and refuses when any resolved address fails the guard. */
export function guardedLookup(guard: AddressGuard, resolve = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as unknown as LookupAddress[];
      if (list.length === 0 || list.some((a) => !guard(a.address, a.family))) {
        return callback(new RefusedAddress(hostname), '', 0);
      }
      if ((options as { all?: boolean }).all)
        return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      const [first] = list as [LookupAddress];
      callback(null, first.address, first.family);
    });
  };
}

export interface SendOptions {
  /** Default: `shared/webhooks/address-guard.ts` as deployed (public unicast addresses only). */
  guard?: AddressGuard;
  timeoutMs?: number;
  lookup?: LookupFunction;
  /** Whether the URL's port may be connected to (`portAllowed`); a refused one is `address refused`. */
  allowPort?: (url: URL) => boolean;
}

export async function sendAttempt(
  url: string,
  headers: Record<string, string>,
  payload: string,
  options: SendOptions = {},
): Promise<Attempt> {
  const started = performance.now();
  const elapsed = () => Math.round((performance.now() - started) * 10) / 10;
  const failed = (error: string, cause: string | null = null): Attempt => ({
    status: null,
    durationMs: elapsed(),
    snippet: '',
    error,
    cause,
    delivered: false,
  });
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return failed('invalid URL');
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') return failed('unsupported scheme');
  if (options.allowPort && !options.allowPort(target)) return failed('address refused');
  const guard = options.guard ?? addressGuard();
  // An address literal is connected to without any lookup: the guard judges it here instead.
  const literal = target.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(literal) !== 0 && !guard(literal, isIP(literal))) return failed('address refused');
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const body = Buffer.from(payload, 'utf8');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  return new Promise<Attempt>((resolve) => {
    let settled = false;
    const finish = (attempt: Attempt) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve(attempt);
    };
    const req = request(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(body.length) },
        lookup: options.lookup ?? guardedLookup(guard),
        // One connection per attempt: nothing pooled outlives a changed DNS answer.
        agent: false,
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (chunk: Buffer) => {
          if (kept < SNIPPET_BYTES) {
            chunks.push(chunk.subarray(0, SNIPPET_BYTES - kept));
            kept += Math.min(chunk.length, SNIPPET_BYTES - kept);
          }
          // Enough read: the rest of a large answer is not our business.
          if (kept >= SNIPPET_BYTES) res.destroy();
        });
        const done = () => {
          const status = res.statusCode ?? null;
          finish({
            status,
            durationMs: elapsed(),
            snippet: Buffer.concat(chunks).toString('utf8'),
            error: null,
            cause: null,
            delivered: status !== null && status >= 200 && status < 300,
          });
        };
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      },
    );
    const deadline = setTimeout(() => {
      req.destroy();
      finish(failed(NO_ANSWER, `timeout after ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (error) => {
      finish(
        error instanceof RefusedAddress
          ? failed('address refused')
          : failed(NO_ANSWER, (error as NodeJS.ErrnoException).code ?? 'connection failed'),
      );
    });
    req.end(body);
  });
}
