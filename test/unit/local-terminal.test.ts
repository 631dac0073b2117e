/**
 * `npm start`'s terminal (scripts/local/terminal.ts): one short line per request and per webhook
 * attempt, coloured only on a TTY; LOG_FORMAT=json leaves the functions' CloudWatch lines untouched.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  formatLogLine,
  formatRequest,
  logFormatFromEnv,
  openTerminal,
  type Terminal,
} from '#scripts/local/terminal.ts';
import {
  emitDeliveries,
  emitRequest,
  logError,
  logInfo,
  type RequestFacts,
} from '#shared/observability/telemetry.ts';

const at = new Date(2026, 10, 26, 9, 5, 7, 42);
const request = {
  at,
  method: 'POST',
  path: '/v1/subscriptions/',
  status: 201,
  ms: 12.345,
  operation: 'create-subscription',
};
const ESC = '\u001b[';

const facts: RequestFacts = {
  operation: 'create-subscription',
  method: 'POST',
  route: 'POST /v1/subscriptions',
  status: 201,
  durationMs: 12.3,
  coldStart: false,
  requestId: 'req-1',
  awsRequestId: 'aws-1',
  principalKind: 'user',
  organizationIds: ['org-1'],
};
const telemetry = { roundTrips: 2, readUnits: 1, writeUnits: 4, idempotentReplay: false, business: {} };

const attempt = {
  level: 'info',
  message: 'webhook delivery attempt',
  timestamp: at.toISOString(),
  correlation_id: 'req-1',
  webhook_event_id: 'evt-1',
  endpoint_id: 'ep-1',
  type: 'subscription.created',
  round: 0,
  attempt: 1,
  http_code: 204,
  duration_ms: 5.25,
  outcome: 'delivered',
};

let terminal: Terminal | undefined;
afterEach(() => {
  terminal?.restore();
  terminal = undefined;
  vi.restoreAllMocks();
});

describe('npm start terminal lines', () => {
  it('prints one plain line per request when stdout is not a terminal', () => {
    expect(formatRequest(request, false)).toBe(
      '09:05:07.042 POST   /v1/subscriptions/ 201 12.3 ms create-subscription',
    );
  });

  it('colours the status by class on a terminal, and the text stays the same', () => {
    const line = formatRequest({ ...request, status: 503 }, true);
    expect(line).toContain(`${ESC}31m503${ESC}0m`);
    expect(formatRequest({ ...request, status: 201 }, true)).toContain(`${ESC}32m201${ESC}0m`);
    expect(line.replace(new RegExp(`${ESC.replace('[', '\\[')}\\d+m`, 'g'), '')).toBe(
      '09:05:07.042 POST   /v1/subscriptions/ 503 12.3 ms create-subscription',
    );
  });

  it('prints one line per webhook attempt, with its outcome', () => {
    expect(formatLogLine(attempt, false)).toBe(
      '09:05:07.042 WEBHOOK subscription.created → endpoint ep-1 attempt 1 204 delivered 5.3 ms',
    );
    const { http_code: _code, ...refused } = attempt;
    expect(formatLogLine({ ...refused, error: 'ECONNREFUSED', outcome: 'retry' }, false)).toBe(
      '09:05:07.042 WEBHOOK subscription.created → endpoint ep-1 attempt 1 ECONNREFUSED retry 5.3 ms',
    );
  });

  it('shows the request once (the server line), and no relay or metrics-only line', () => {
    expect(formatLogLine({ level: 'info', message: 'request', operation: 'x' }, false)).toBeUndefined();
    expect(formatLogLine({ level: 'info', message: 'webhook event relayed' }, false)).toBeUndefined();
    expect(formatLogLine({ _aws: {}, DeliveryAttempts: 1 }, false)).toBeUndefined();
  });

  it('renders the functions lines through the sink, errors to stderr', () => {
    const out: string[] = [];
    const err: string[] = [];
    const console = vi.spyOn(globalThis.console, 'log').mockImplementation(() => undefined);
    terminal = openTerminal({
      format: 'pretty',
      color: false,
      out: (t) => out.push(t),
      err: (t) => err.push(t),
    });
    emitRequest(facts, telemetry);
    emitDeliveries(1, 0);
    logInfo('webhook delivery attempt', attempt);
    logError('unexpected error', { name: 'Boom' });
    terminal.logRequest?.(request);
    expect(console).not.toHaveBeenCalled();
    expect(out).toEqual([
      expect.stringMatching(
        /^\d\d:\d\d:\d\d\.\d{3} WEBHOOK subscription\.created → endpoint ep-1 attempt 1 204 delivered 5\.3 ms$/,
      ),
      '09:05:07.042 POST   /v1/subscriptions/ 201 12.3 ms create-subscription',
    ]);
    expect(err).toEqual([expect.stringMatching(/^\d\d:\d\d:\d\d\.\d{3} error: unexpected error name=Boom$/)]);
  });

  it('quiet: errors only', () => {
    const out: string[] = [];
    const err: string[] = [];
    terminal = openTerminal({
      format: 'pretty',
      quiet: true,
      out: (t) => out.push(t),
      err: (t) => err.push(t),
    });
    expect(terminal.logRequest).toBeUndefined();
    logInfo('webhook delivery attempt', attempt);
    logError('unexpected error', { name: 'Boom' });
    expect(out).toEqual([]);
    expect(err).toHaveLength(1);
  });

  it('LOG_FORMAT=json: the JSON/EMF lines the deployed functions write, untouched', () => {
    expect(logFormatFromEnv('json')).toBe('json');
    expect(logFormatFromEnv(undefined)).toBe('pretty');
    expect(() => logFormatFromEnv('xml')).toThrow(/LOG_FORMAT/);
    const out: string[] = [];
    const logged: string[] = [];
    vi.spyOn(globalThis.console, 'log').mockImplementation((text: string) => logged.push(text));
    terminal = openTerminal({ format: 'json', out: (t) => out.push(t) });
    expect(terminal.logRequest).toBeUndefined();
    emitRequest(facts, telemetry);
    expect(out).toEqual([]);
    expect(logged).toHaveLength(1);
    const line = JSON.parse(logged[0] as string);
    expect(line).toMatchObject({ message: 'request', operation: 'create-subscription', status: 201 });
    expect(line._aws.CloudWatchMetrics[0].Namespace).toBe('CommerceApi/local');
  });
});
