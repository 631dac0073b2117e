/**
 * A key-set rotation (docs/deploying.md, "Rotating the webhook key set"): after a new version is made
 * current, `resealWebhookSecrets` (what `npm run admin -- webhook rotate-keys` runs) seals every
 * stored secret under it, live and deleted endpoints, current and overlapping previous secrets, list
 * entries in step, and drops a previous secret whose overlap has ended; every answer shows the same
 * secrets as before, and the old version can then leave the key set.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  createOrganization,
  createPersonalAccessToken,
  createUser,
} from '#scripts/admin/commands.ts';
import { keys } from '#shared/data/table.ts';
import { webhookEndpointRecord } from '#shared/data/webhooks.ts';
import { rotateKeySetDocument, staticKeyring } from '#shared/domain/keyring.ts';
import type { Dependencies } from '#shared/runtime.ts';
import { resealWebhookSecrets, signingSecrets } from '#shared/services/webhook-endpoints.ts';
import { seedSnapshot } from '../support/dynamodb.ts';
import { listPartition } from '../support/table-state.ts';
import { createWorld, inProcessApi, type World } from '../support/world.ts';

let world: World;
let token: string;
let organizationId: string;
/** The key set the demo seed sealed its endpoints with, then the same with k2 added and current. */
let k1: string;
let k2: string;
/** k2 alone: what the key set holds once k1 has left it. */
let k2Only: string;

const withKeys =
  (document: string) =>
  (name: string): Dependencies => {
    const deps = world.depsFor(name);
    return { ...deps, webhooks: { ...deps.webhooks, keyring: staticKeyring(document) } };
  };

beforeAll(async () => {
  world = await createWorld('webhook-key-rotation');
  k1 = seedSnapshot().keySet;
  expect(JSON.parse(k1).current).toBe('k1');
  k2 = rotateKeySetDocument(k1);
  k2Only = JSON.stringify({ current: 'k2', k2: JSON.parse(k2).k2 });
  const { admin } = world;
  const org = await createOrganization(admin, { name: 'Rotation' });
  const user = await createUser(admin, { email: `rotation-${randomUUID()}@x.example` });
  await addMember(admin, org.id, user.id);
  organizationId = org.id;
  token = (await createPersonalAccessToken(admin, { userId: user.id, scope: 'webhooks:write' })).token;
});
afterAll(() => world?.drop());

const stored = async (id: string) =>
  webhookEndpointRecord(
    (
      await world.table.doc.send(
        new GetCommand({ TableName: world.table.name, Key: keys.webhookEndpoint(id), ConsistentRead: true }),
      )
    ).Item as Record<string, unknown>,
  );

describe('webhook rotate-keys', () => {
  it('re-seals every stored secret under the new version; answers and signatures stay the same', async () => {
    const underK1 = inProcessApi(withKeys(k1));
    const base = '/v1/webhooks/endpoints';
    const body = {
      url: 'https://hooks.example.com/r',
      format: 'raw',
      events: [],
      organization_id: organizationId,
    };
    const plain = (await underK1('POST', base, { token, body })).body;
    const overlapping = (await underK1('POST', base, { token, body })).body;
    const reset = (await underK1('PATCH', `${base}/${overlapping.id}/secret`, { token })).body;
    const ended = (await underK1('POST', base, { token, body })).body;
    await underK1('PATCH', `${base}/${ended.id}/secret?previous_secret_overlap_seconds=1`, { token });
    const deleted = (await underK1('POST', base, { token, body })).body;
    expect((await underK1('DELETE', `${base}/${deleted.id}`, { token })).status).toBe(204);
    // The overlap of `ended` is over once this second has passed.
    const later = new Date(Date.now() + 2000);
    const endedRecord = await stored(ended.id);
    expect(endedRecord.previous_secret_ciphertext).toMatch(/^k1\./);

    // The operator's credentials (the CLI's), not a function's: a Scan no function is granted.
    const { admin } = world;
    const deps = { ...admin, webhooks: { ...admin.webhooks, keyring: staticKeyring(k2) }, now: () => later };
    const report = await resealWebhookSecrets(deps);
    expect(report.current).toBe('k2');
    expect(report.skipped).toEqual([]);
    expect(report.resealed).toBeGreaterThanOrEqual(4);
    expect(Object.keys(report.versions)).toEqual(['k2']);

    for (const id of [plain.id, overlapping.id, ended.id, deleted.id]) {
      const record = await stored(id);
      expect(record.secret_ciphertext, id).toMatch(/^k2\./);
      if (record.previous_secret_ciphertext) expect(record.previous_secret_ciphertext, id).toMatch(/^k2\./);
      // The list entries hold the same ciphertexts (a deleted endpoint has none).
      const entries = (
        await listPartition(world.table, 'webhookEndpointList', organizationId)
      ).entries.filter((entry) => entry.id === id);
      expect(entries.length, id).toBe(id === deleted.id ? 0 : 3);
      for (const entry of entries) expect(entry.secret_ciphertext).toBe(record.secret_ciphertext);
    }
    // An ended overlap is dropped rather than carried over.
    expect((await stored(ended.id)).previous_secret_ciphertext).toBeNull();
    // A live overlap still signs with both, now opened with k2 alone.
    const underK2 = inProcessApi(withKeys(k2Only));
    const k2Deps = withKeys(k2Only)('webhook-deliverer');
    expect(await signingSecrets(k2Deps, await stored(overlapping.id), new Date())).toEqual([
      reset.secret,
      overlapping.secret,
    ]);
    expect((await underK2('GET', `${base}/${plain.id}`, { token })).body.secret).toBe(plain.secret);
    expect((await underK2('GET', `${base}/${overlapping.id}`, { token })).body.secret).toBe(reset.secret);

    // Run again: nothing left to do.
    const again = await resealWebhookSecrets(deps);
    expect(again.resealed).toBe(0);
  });
});
