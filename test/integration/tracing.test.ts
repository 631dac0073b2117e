/**
 * X-Ray: with a trace header and a daemon address (what Lambda gives a traced invocation), every
 * DynamoDB call of a request reaches the daemon as a subsegment of the invocation's segment; without
 * them (local runs), nothing is sent. The daemon here is a UDP socket on loopback.
 */
import { createSocket, type Socket } from 'node:dgram';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { waitFor } from '../support/wait.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
let daemon: Socket;
const received: Record<string, unknown>[] = [];
const TRACE = '1-5759e988-bd862e3fe1be46a994272793';
const PARENT = '53995c3f42cd8ad8';

beforeAll(async () => {
  world = await createWorld('tracing');
  daemon = createSocket('udp4');
  daemon.on('message', (message) => {
    if (message.toString('utf8') === MARKER) {
      markersSeen += 1;
      return;
    }
    const [header, body] = message.toString('utf8').split('\n');
    expect(JSON.parse(header ?? '')).toEqual({ format: 'json', version: 1 });
    received.push(JSON.parse(body ?? ''));
  });
  await new Promise<void>((resolve) => daemon.bind(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  daemon?.close();
  await world?.drop();
});
afterEach(() => {
  vi.unstubAllEnvs();
  received.length = 0;
});

/**
 * Everything sent to the daemon so far has arrived: a marker datagram sent now is received after
 * whatever the handler sent before it (loopback delivers in the order sent), so "nothing more" is
 * waited for as a state, not for a fixed time.
 */
const MARKER = 'marker';
let markersSeen = 0;
async function settle(): Promise<void> {
  const expected = markersSeen + 1;
  const sender = createSocket('udp4');
  try {
    await new Promise<void>((resolve, reject) =>
      sender.send(MARKER, daemon.address().port, '127.0.0.1', (error) => (error ? reject(error) : resolve())),
    );
    await waitFor(() => markersSeen >= expected, 5_000, 'the marker datagram');
  } finally {
    sender.close();
  }
}
const getProduct = () =>
  world.call('GET', `/v1/products/${world.demo.free_product_id}`, {
    token: world.demo.personal_access_token,
  });

describe('X-Ray subsegments for DynamoDB calls', () => {
  it('sends one subsegment per round trip, children of the invocation, naming operation and table', async () => {
    vi.stubEnv('AWS_XRAY_DAEMON_ADDRESS', `127.0.0.1:${daemon.address().port}`);
    vi.stubEnv('_X_AMZN_TRACE_ID', `Root=${TRACE};Parent=${PARENT};Sampled=1`);
    world.resetCount();
    const reply = await getProduct();
    expect(reply.status).toBe(200);
    await waitFor(() => received.length >= world.roundTrips(), 5_000, 'a subsegment per round trip');
    await settle();
    expect(received).toHaveLength(world.roundTrips());
    expect(received.map((s) => (s.aws as { operation: string }).operation)).toEqual(['GetItem', 'GetItem']);
    for (const segment of received) {
      expect(segment).toMatchObject({
        type: 'subsegment',
        name: 'DynamoDB',
        namespace: 'aws',
        trace_id: TRACE,
        parent_id: PARENT,
        aws: { table_name: world.table.name, retries: 0 },
        http: { response: { status: 200 } },
      });
      expect(segment.id).toMatch(/^[0-9a-f]{16}$/);
      expect(segment.end_time as number).toBeGreaterThanOrEqual(segment.start_time as number);
    }
  });

  it('marks a refused call as an error (4xx from DynamoDB), keeping the request its contract answer', async () => {
    vi.stubEnv('AWS_XRAY_DAEMON_ADDRESS', `127.0.0.1:${daemon.address().port}`);
    vi.stubEnv('_X_AMZN_TRACE_ID', `Root=${TRACE};Parent=${PARENT};Sampled=1`);
    const reply = await world.call('GET', '/v1/products/6f1b1f1e-0000-4000-8000-000000000000', {
      token: world.demo.personal_access_token,
    });
    expect(reply.status).toBe(404);
    await waitFor(() => received.length > 0, 5_000, 'a subsegment');
    await settle();
    expect(received.length).toBeGreaterThan(0);
    expect(received.every((segment) => segment.error === undefined && segment.fault === undefined)).toBe(
      true,
    );
  });

  it('sends nothing when the invocation is not sampled, or with no daemon (local runs)', async () => {
    vi.stubEnv('AWS_XRAY_DAEMON_ADDRESS', `127.0.0.1:${daemon.address().port}`);
    vi.stubEnv('_X_AMZN_TRACE_ID', `Root=${TRACE};Parent=${PARENT};Sampled=0`);
    expect((await getProduct()).status).toBe(200);
    vi.stubEnv('_X_AMZN_TRACE_ID', `Root=${TRACE};Parent=${PARENT};Sampled=1`);
    vi.stubEnv('AWS_XRAY_DAEMON_ADDRESS', '');
    expect((await getProduct()).status).toBe(200);
    await settle();
    expect(received).toEqual([]);
  });
});
