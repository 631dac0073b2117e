/**
 * Cancel at period end, uncancel and revoke (PATCH and DELETE /v1/subscriptions/{id}) against
 * DynamoDB Local under the functions' deployed policies: every field of the Subscription moves
 * consistently, an ended subscription changes no more, races leave one consistent state.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentedReply } from '../support/contract.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('subscription-lifecycle');
});
afterAll(() => world?.drop());

type Subscription = Record<string, unknown> & { id: string; current_period_end: string };

async function subscribe(): Promise<Subscription> {
  const reply = await world.call('POST', '/v1/subscriptions/', {
    token: world.demo.personal_access_token,
    body: { product_id: world.demo.free_product_id, customer_id: world.demo.customer_id },
  });
  expect(reply.status).toBe(201);
  return reply.body;
}

const patch = (id: string, body: unknown, token = world.demo.personal_access_token) =>
  world.call('PATCH', `/v1/subscriptions/${id}`, { token, body });
const revoke = (id: string, token = world.demo.personal_access_token) =>
  world.call('DELETE', `/v1/subscriptions/${id}`, { token });
const read = async (id: string) =>
  (await world.call('GET', `/v1/subscriptions/${id}`, { token: world.demo.personal_access_token })).body;

describe('PATCH /v1/subscriptions/{id}', () => {
  it('cancel at period end: still active, canceled now, ends at the period end; 4 round trips', async () => {
    const subscription = await subscribe();
    world.resetCount();
    const reply = documentedReply(
      'updateSubscription',
      await patch(subscription.id, {
        cancel_at_period_end: true,
        customer_cancellation_reason: 'too_expensive',
        customer_cancellation_comment: 'Budget cuts.\nSorry.',
      }),
    );
    expect(world.roundTrips()).toBe(4);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      id: subscription.id,
      status: 'active',
      cancel_at_period_end: true,
      ends_at: subscription.current_period_end,
      ended_at: null,
      customer_cancellation_reason: 'too_expensive',
      customer_cancellation_comment: 'Budget cuts.\nSorry.',
    });
    expect(Date.parse(reply.body.canceled_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(reply.body.modified_at).toBe(reply.body.canceled_at);
    expect(await read(subscription.id)).toEqual(reply.body);
  });

  it('uncancel takes the cancellation back; canceling twice keeps the first cancellation time', async () => {
    const subscription = await subscribe();
    const first = await patch(subscription.id, { cancel_at_period_end: true });
    const again = await patch(subscription.id, {
      cancel_at_period_end: true,
      customer_cancellation_reason: 'unused',
    });
    expect(again.body.canceled_at).toBe(first.body.canceled_at);
    expect(again.body.customer_cancellation_reason).toBe('unused');
    const back = documentedReply(
      'updateSubscription',
      await patch(subscription.id, { cancel_at_period_end: false }),
    );
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({
      status: 'active',
      cancel_at_period_end: false,
      canceled_at: null,
      ends_at: null,
      ended_at: null,
      customer_cancellation_reason: null,
      customer_cancellation_comment: null,
    });
  });

  it('revoke ends it now: canceled, ended_at = ends_at; nothing changes it afterwards (403)', async () => {
    const subscription = await subscribe();
    await patch(subscription.id, { cancel_at_period_end: true });
    const reply = documentedReply('updateSubscription', await patch(subscription.id, { revoke: true }));
    expect(reply.body).toMatchObject({ status: 'canceled', cancel_at_period_end: false });
    expect(reply.body.ended_at).toBe(reply.body.ends_at);
    const ended = await read(subscription.id);
    for (const body of [{ cancel_at_period_end: false }, { cancel_at_period_end: true }, { revoke: true }]) {
      const refused = documentedReply('updateSubscription', await patch(subscription.id, body));
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ error: 'AlreadyCanceledSubscription', detail: expect.any(String) });
    }
    expect(await read(subscription.id)).toEqual(ended);
  });

  it('refuses bodies that ask for nothing, for both, or for what is not supported (422), changing nothing', async () => {
    const subscription = await subscribe();
    for (const body of [
      {},
      { revoke: false },
      { revoke: true, cancel_at_period_end: true },
      { cancel_at_period_end: 'yes' },
      { product_id: world.demo.paid_product_id },
      { cancel_at_period_end: true, customer_cancellation_reason: 'bored' },
      { cancel_at_period_end: true, customer_cancellation_comment: 'bell\u0007' },
      { cancel_at_period_end: true, customer_cancellation_comment: '' },
    ]) {
      const reply = documentedReply('updateSubscription', await patch(subscription.id, body));
      expect(reply.status, JSON.stringify(body)).toBe(422);
    }
    expect(await read(subscription.id)).toEqual(subscription);
  });

  it('another organization’s subscription and an unknown id are the same 404', async () => {
    const other = world.demo.other_organization;
    const theirs = await world.call('POST', '/v1/subscriptions/', {
      token: other.personal_access_token,
      body: { product_id: other.free_product_id, customer_id: other.customer_id },
    });
    const foreign = await patch(theirs.body.id, { revoke: true });
    const unknown = await patch(randomUUID(), { revoke: true });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(unknown.body);
    expect(
      (await world.call('GET', `/v1/subscriptions/${theirs.body.id}`, { token: other.personal_access_token }))
        .body.status,
    ).toBe('active');
  });

  it('needs subscriptions:write', async () => {
    const subscription = await subscribe();
    const reply = await patch(
      subscription.id,
      { revoke: true },
      world.demo.personal_access_token_without_scopes,
    );
    expect(reply.status).toBe(403);
    expect(reply.body.error).toBe('insufficient_scope');
  });
});

describe('DELETE /v1/subscriptions/{id}', () => {
  it('revokes and answers the ended subscription; a second delete is 403', async () => {
    const subscription = await subscribe();
    const reply = documentedReply('revokeSubscription', await revoke(subscription.id));
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: subscription.id, status: 'canceled' });
    expect(documentedReply('revokeSubscription', await revoke(subscription.id)).status).toBe(403);
  });

  it('of concurrent revokes exactly one answers 200, the others 403; one consistent state', async () => {
    const subscription = await subscribe();
    const replies = await Promise.all(Array.from({ length: 6 }, () => revoke(subscription.id)));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 403)).toHaveLength(5);
    const final = await read(subscription.id);
    expect(final).toMatchObject({ status: 'canceled' });
    expect(final.ended_at).toBe(final.ends_at);
  });

  it('a cancel racing a revoke: whichever order, the subscription ends canceled and stays so', async () => {
    const subscription = await subscribe();
    const [canceled, revoked] = await Promise.all([
      patch(subscription.id, { cancel_at_period_end: true }),
      revoke(subscription.id),
    ]);
    expect(revoked.status).toBe(200);
    expect([200, 403]).toContain(canceled.status);
    expect(await read(subscription.id)).toMatchObject({ status: 'canceled', cancel_at_period_end: false });
  });
});
