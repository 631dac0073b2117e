import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  countBusinessEvent,
  countDynamoCall,
  emitRequest,
  inRequestScope,
  markIdempotentReplay,
  type RequestFacts,
} from '#shared/observability/telemetry.ts';

const facts: RequestFacts = {
  operation: 'create-subscription',
  method: 'POST',
  route: 'POST /v1/subscriptions',
  status: 201,
  durationMs: 12.3456,
  coldStart: false,
  requestId: 'req-1',
  awsRequestId: 'aws-1',
  principalKind: 'user',
  organizationIds: ['org-1'],
};

const pause = () => new Promise((resolve) => setTimeout(resolve, 1));

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe('request telemetry', () => {
  it('adds each call to the request that made it, with concurrent requests in one process', async () => {
    const first = inRequestScope(async () => {
      countDynamoCall('GetItemCommand', { ConsumedCapacity: { CapacityUnits: 0.5 } });
      await pause();
      countDynamoCall('TransactWriteItemsCommand', {
        ConsumedCapacity: [{ CapacityUnits: 2 }, { CapacityUnits: 4 }],
      });
      countBusinessEvent('SubscriptionsCreated');
    });
    const second = inRequestScope(async () => {
      await pause();
      countDynamoCall('QueryCommand', { ConsumedCapacity: { CapacityUnits: 1.5 } });
      markIdempotentReplay();
    });
    await Promise.all([first.result, second.result]);
    expect(first.telemetry).toMatchObject({
      roundTrips: 2,
      readUnits: 0.5,
      writeUnits: 6,
      idempotentReplay: false,
      business: { SubscriptionsCreated: 1 },
    });
    expect(second.telemetry).toMatchObject({
      roundTrips: 1,
      readUnits: 1.5,
      writeUnits: 0,
      idempotentReplay: true,
    });
    expect(second.telemetry.business).toEqual({});
  });

  it('counts nothing outside a request (the operator CLI, the seed)', () => {
    expect(() => countDynamoCall('GetItemCommand', {})).not.toThrow();
  });

  it('writes one line: log fields, metric values and the directive naming them', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const { telemetry, result } = inRequestScope(async () => {
      countDynamoCall('BatchGetItemCommand', { ConsumedCapacity: [{ CapacityUnits: 1.5 }] });
      countBusinessEvent('SubscriptionsCreated');
    });
    await result;
    emitRequest(facts, telemetry);
    const lines = log.mock.calls.map((args) => JSON.parse(String(args[0])));
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(line).toMatchObject({
      level: 'info',
      message: 'request',
      operation: 'create-subscription',
      status: 201,
      duration_ms: 12.346,
      Latency: 12.346,
      SubscriptionsCreated: 1,
      dynamodb: { round_trips: 1, read_units: 1.5, write_units: 0 },
    });
    expect(line).not.toHaveProperty('error_type');
    const [directive] = line._aws.CloudWatchMetrics;
    expect(directive.Namespace).toBe('CommerceApi/local');
    expect(directive.Dimensions).toEqual([['service'], ['service', 'operation']]);
    expect(directive.Metrics).toContainEqual({ Name: 'SubscriptionsCreated', Unit: 'Count' });
  });

  it('adds the error type as a dimension for 4xx and 5xx answers only', () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const { telemetry } = inRequestScope(async () => {});
    telemetry.errorType = 'ResourceNotFound';
    emitRequest({ ...facts, status: 404 }, telemetry);
    const line = JSON.parse(String(log.mock.calls[0]?.[0]));
    expect(line).toMatchObject({ error_type: 'ResourceNotFound', Errors4xx: 1, Errors5xx: 0 });
    expect(line._aws.CloudWatchMetrics[0].Dimensions).toContainEqual(['service', 'operation', 'error_type']);
  });

  it('below info, writes the metrics without the log fields; METRICS_NAMESPACE names the namespace', () => {
    vi.stubEnv('LOG_LEVEL', 'error');
    vi.stubEnv('METRICS_NAMESPACE', 'CommerceApi/pr-7');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    emitRequest(facts, inRequestScope(async () => {}).telemetry);
    const line = JSON.parse(String(log.mock.calls[0]?.[0]));
    expect(line).not.toHaveProperty('level');
    expect(line).not.toHaveProperty('request_id');
    expect(line).toMatchObject({ Requests: 1, operation: 'create-subscription' });
    expect(line._aws.CloudWatchMetrics[0].Namespace).toBe('CommerceApi/pr-7');
  });
});
