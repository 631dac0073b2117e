import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookEndpoint } from '#scripts/admin/commands.ts';
import { keys } from '#shared/data/table.ts';
import { listPartition } from '../support/table-state.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('delete-webhook');
});
afterAll(() => world?.drop());

const del = (id: string, token = world.demo.personal_access_token, path = `/v1/webhooks/endpoints/${id}`) =>
  world.call('DELETE', path, { token });
const notFound = { error: 'ResourceNotFound', detail: 'Not found' };
const fresh = async () =>
  (
    await createWebhookEndpoint(world.admin, {
      organizationId: world.demo.organization_id,
      url: 'https://h.example/x',
    })
  ).endpoint.id;

describe('Delete Webhook Endpoint', () => {
  it('soft-deletes: 204 with no body, then the endpoint is disabled and marked deleted', async () => {
    const id = await fresh();
    const reply = await del(id);
    expect(reply.status).toBe(204);
    expect(reply.raw ?? '').toBe('');
    const stored = await world.table.doc.send(
      new GetCommand({ TableName: world.table.name, Key: keys.webhookEndpoint(id) }),
    );
    expect(stored.Item?.enabled).toBe(false);
    expect(stored.Item?.deleted_at).toMatch(/Z$/);
    expect(stored.Item?.url).toBe('https://h.example/x');
  });

  it('a second delete is 404', async () => {
    const id = await fresh();
    expect((await del(id)).status).toBe(204);
    const again = await del(id);
    expect(again.status).toBe(404);
    expect(again.body).toEqual(notFound);
  });

  it('an unknown id and an id of another organization answer identically (404)', async () => {
    const unknown = await del('0b5e7d5e-5a4f-4c1e-9a0b-0d5c3e2f1a99');
    const foreign = await del(world.demo.other_organization.webhook_endpoint_id);
    expect(unknown.status).toBe(404);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(unknown.body);
    expect(foreign.headers).toEqual(unknown.headers);
    const stored = await world.table.doc.send(
      new GetCommand({
        TableName: world.table.name,
        Key: keys.webhookEndpoint(world.demo.other_organization.webhook_endpoint_id),
      }),
    );
    expect(stored.Item?.deleted_at).toBeNull();
  });

  it('serves the path with a trailing slash and ids in upper case', async () => {
    const id = await fresh();
    expect((await del(id, undefined, `/v1/webhooks/endpoints/${id.toUpperCase()}/`)).status).toBe(204);
  });

  it('of concurrent deletes of one endpoint exactly one gets 204', async () => {
    for (let round = 0; round < 5; round++) {
      const id = await fresh();
      const replies = await Promise.all(Array.from({ length: 8 }, () => del(id)));
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses).toEqual([204, 404, 404, 404, 404, 404, 404, 404]);
    }
  });

  it('rejects a path id that is not a UUID4 (422 at path.id)', async () => {
    for (const [id, type] of [
      ['not-a-uuid', 'uuid_parsing'],
      ['a8098c1a-f86e-11da-bd1a-00112444be1e', 'uuid_version'],
    ] as const) {
      const reply = await del(id);
      expect(reply.status).toBe(422);
      expect(reply.body).toMatchObject({
        error: 'RequestValidationError',
        detail: [{ loc: ['path', 'id'], type }],
      });
    }
  });

  it('costs 3 DynamoDB round trips, authentication included: the endpoint is read, then one transaction', async () => {
    const id = await fresh();
    world.resetCount();
    expect((await del(id)).status).toBe(204);
    expect(world.roundTrips()).toBe(3);
  });

  it('leaves the organization’s list in the same write: its entries removed, the count lowered', async () => {
    const list = () => listPartition(world.table, 'webhookEndpointList', world.demo.organization_id);
    const count = async () => (await list()).count;
    const id = await fresh();
    const before = await count();
    expect((await del(id)).status).toBe(204);
    expect(await count()).toBe(before - 1);
    expect((await list()).entries.filter((entry) => entry.id === id)).toEqual([]);
    // A second delete, refused, changes the count no further.
    expect((await del(id)).status).toBe(404);
    expect(await count()).toBe(before - 1);
  });
});
