import { describe, expect, it } from 'vitest';
import { daemonAddress, subsegment, traceContext } from '#shared/observability/xray.ts';

const call = {
  operation: 'TransactWriteItems',
  tableName: 't',
  region: 'eu-west-1',
  startedAt: 1_700_000_000_000,
  endedAt: 1_700_000_000_250,
  requestId: 'R',
  statusCode: 200,
  retries: 1,
};
const trace = { traceId: '1-5759e988-bd862e3fe1be46a994272793', parentId: '53995c3f42cd8ad8' };

describe('X-Ray protocol pieces', () => {
  it('reads a sampled trace header, and nothing else', () => {
    expect(traceContext(`Root=${trace.traceId};Parent=${trace.parentId};Sampled=1`)).toEqual(trace);
    expect(traceContext(`Root=${trace.traceId};Parent=${trace.parentId};Sampled=0`)).toBeUndefined();
    expect(traceContext(`Root=${trace.traceId};Sampled=1`)).toBeUndefined();
    expect(traceContext(`Root=bogus;Parent=${trace.parentId};Sampled=1`)).toBeUndefined();
    expect(traceContext(undefined)).toBeUndefined();
  });

  it("reads the daemon's UDP address, in Lambda's two-address form too", () => {
    expect(daemonAddress('169.254.79.129:2000')).toEqual({ host: '169.254.79.129', port: 2000 });
    expect(daemonAddress('tcp:127.0.0.1:2000 udp:127.0.0.2:2001')).toEqual({ host: '127.0.0.2', port: 2001 });
    expect(daemonAddress('nonsense')).toBeUndefined();
    expect(daemonAddress('')).toBeUndefined();
  });

  it('writes seconds, the AWS block, and error/fault/throttle as X-Ray defines them', () => {
    const ok = subsegment(call, trace);
    expect(ok).toMatchObject({ start_time: 1_700_000_000, end_time: 1_700_000_000.25, aws: { retries: 1 } });
    expect(ok).not.toHaveProperty('error');
    expect(
      subsegment({ ...call, statusCode: 400, error: 'ConditionalCheckFailedException' }, trace),
    ).toMatchObject({
      error: true,
    });
    expect(subsegment({ ...call, statusCode: 400, error: 'ThrottlingException' }, trace)).toMatchObject({
      fault: true,
      throttle: true,
    });
    expect(subsegment({ ...call, statusCode: undefined, error: 'TimeoutError' }, trace)).toMatchObject({
      fault: true,
    });
  });
});
