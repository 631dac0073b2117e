/**
 * Webhook events: the types this API emits, their envelope, and the identities that make a
 * delivery recognisable across retries, redeliveries and re-runs of the pipeline.
 *
 * An event is written once per change, in the change's own transaction (the outbox,
 * `shared/data/outbox.ts`); the relay fans it out to the endpoints subscribed to its type. Each
 * (event, endpoint) pair is one *webhook event* whose id is the `webhook-id` header: derived from the
 * pair, so a relay that runs twice over the same event records and names the same thing twice.
 */
import { derivedId } from '../domain/ids.ts';

/** Every type this API emits; an endpoint subscribes to a subset (`events`). */
export const WEBHOOK_EVENT_TYPES = [
  'customer.created',
  'customer.updated',
  'customer.deleted',
  'customer.state_changed',
  'product.created',
  'product.updated',
  'meter.created',
  'meter.updated',
  'subscription.created',
  'subscription.active',
  'subscription.updated',
  'subscription.canceled',
  'subscription.uncanceled',
  'subscription.revoked',
  'subscription.cycled',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** One event of a change: its type and the object as the API returns it. */
export interface ChangeEvent {
  type: WebhookEventType;
  data: object;
}

/** What a change is about: the object whose events must arrive in the order they were written. */
export interface EventSubject {
  kind: 'customer' | 'product' | 'subscription' | 'meter';
  id: string;
  organizationId: string;
}

/**
 * The body every endpoint receives, as exact text: `{type, timestamp, data}` (the Standard Webhooks
 * envelope, as the hosted service sends its `raw` format). Rendered once, when the change is written,
 * so every attempt and every endpoint gets the same bytes.
 */
export function envelope(type: WebhookEventType, timestamp: string, data: object): string {
  return JSON.stringify({ type, timestamp, data });
}

/** The webhook event (and `webhook-id`) of one event for one endpoint. */
export const webhookEventId = (eventId: string, endpointId: string): string =>
  derivedId('webhook-event', eventId, endpointId);

/** How long events, webhook events and their attempts are kept (the hosted service's retention). */
export const EVENT_RETENTION_DAYS = 90;
