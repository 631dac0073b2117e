/**
 * The `customer.state_changed` webhook: the customer's state (`CustomerState`, exactly what Get
 * Customer State answers, `customerStateOf`) after a change to it. The state needs reads (its
 * subscriptions, its customer meters and their usage), so it cannot be rendered in the change's own
 * transaction as the other events are; the stream consumers that see the changes write it instead,
 * as an outbox item the relay then fans out like any other (docs/webhooks.md):
 *
 * - the relay, for a customer's `customer.created` / `customer.updated` outbox items and for its
 *   subscriptions' inserts and changes (created, updated, canceled, uncanceled, revoked, renewed);
 * - the meter aggregator, for the customers whose customer meters a batch folded events into.
 *
 * **One per customer per stream batch**, only when the customer's organization has a live, enabled
 * endpoint subscribed to the type (the batch's endpoint list read, which the relay makes anyway):
 * nothing is read or written for the others. The state is read when the batch runs, after the
 * batch's own writes.
 *
 * **Once per change, whatever the stream retries.** The event's id derives from the customer and the
 * stream sequence number of the batch's newest record about it, its time from that change: its
 * outbox key is the change's, and it is put only if absent (`putDerivedEvent`). A batch handled
 * again (a crash, a timeout, a replay) writes nothing new and so sends nothing twice; a batch
 * bisected after a failure can send one state per half (the newer one last).
 *
 * **Bounded.** A customer whose state is past Get Customer State's read bound (which that operation
 * answers with a 422) gets no `customer.state_changed` for that change: never a partial state, never
 * a failed batch. It is logged (`customer state over the read bound`). A customer deleted by then
 * gets none either (its `customer.deleted` is sent).
 */
import { access as catalogAccess, getCustomer } from '../data/catalog.ts';
import { orderedSequence, type Table } from '../data/dynamo.ts';
import { access as outboxAccess, putDerivedEvent } from '../data/outbox.ts';
import type { WebhookEndpointRecord } from '../data/records.ts';
import { organizationWebhookEndpoints, access as webhooksAccess } from '../data/webhooks.ts';
import { derivedId } from '../domain/ids.ts';
import { logError, logInfo } from '../observability/telemetry.ts';
import { customerStateOf, StateTooLarge, stateAccess } from '../services/customer-state.ts';
import type { WebhookEventType } from './events.ts';

export const STATE_CHANGED: WebhookEventType = 'customer.state_changed';

/** A change to a customer's state, as a stream consumer saw it. */
export interface StateChange {
  organizationId: string;
  customerId: string;
  /** The stream sequence number of the record that carried the change. */
  sequence: string;
  /** When the change happened (the envelope's `timestamp`). */
  at: string;
  correlationId: string | null;
}

/** An organization's endpoints, read once per batch (the relay's reader, or the aggregator's). */
export type EndpointsOf = (organizationId: string) => Promise<WebhookEndpointRecord[]>;

/**
 * An organization's endpoints, read once per organization and batch (its endpoint list, strongly
 * consistent: `organizationWebhookEndpoints`), and only for the organizations asked about.
 */
export function endpointsReader(table: Table): EndpointsOf {
  const read = new Map<string, Promise<WebhookEndpointRecord[]>>();
  return (organizationId) => {
    let found = read.get(organizationId);
    if (!found) {
      found = organizationWebhookEndpoints(table, organizationId);
      read.set(organizationId, found);
    }
    return found;
  };
}

/** Customers handled at once within a batch. */
const WIDTH = 4;

const listens = (endpoint: WebhookEndpointRecord): boolean =>
  endpoint.deleted_at === null && endpoint.enabled && endpoint.events.includes(STATE_CHANGED);

/** The batch's changes, one per customer: its newest (highest sequence). */
export function coalesceStateChanges(changes: readonly StateChange[]): StateChange[] {
  const newest = new Map<string, StateChange>();
  for (const change of changes) {
    const seen = newest.get(change.customerId);
    if (!seen || orderedSequence(change.sequence) > orderedSequence(seen.sequence)) {
      newest.set(change.customerId, change);
    }
  }
  return [...newest.values()];
}

/** The event of one change (its outbox item's id): the customer and the change's sequence number. */
export const stateChangedEventId = (customerId: string, sequence: string): string =>
  derivedId('customer-state-changed', customerId, orderedSequence(sequence));

/**
 * Writes the `customer.state_changed` outbox item of each customer the batch changed, whose
 * organization listens (see above), its state read at `now` (the batch's clock: its subscriptions'
 * meters count their periods up to then); answers how many this call wrote. Throws when a read or
 * a write failed, so that the consumer's batch is retried (every step is idempotent).
 */
export async function writeStateChanges(
  table: Table,
  endpointsOf: EndpointsOf,
  changes: readonly StateChange[],
  now: Date,
): Promise<number> {
  const work = coalesceStateChanges(changes);
  let written = 0;
  for (let i = 0; i < work.length; i += WIDTH) {
    const wrote = await Promise.all(
      work.slice(i, i + WIDTH).map((change) => writeOne(table, endpointsOf, change, now)),
    );
    written += wrote.filter(Boolean).length;
  }
  return written;
}

async function writeOne(
  table: Table,
  endpointsOf: EndpointsOf,
  change: StateChange,
  now: Date,
): Promise<boolean> {
  if (!(await endpointsOf(change.organizationId)).some(listens)) return false;
  const customer = await getCustomer(table, change.customerId, true);
  if (!customer || customer.deleted_at !== null || customer.organization_id !== change.organizationId) {
    return false;
  }
  let state: object;
  try {
    state = await customerStateOf(table, customer, now);
  } catch (error) {
    if (!(error instanceof StateTooLarge)) throw error;
    logError('customer.state_changed not sent: customer state over the read bound', {
      customer_id: change.customerId,
      organization_id: change.organizationId,
      why: error.why,
    });
    return false;
  }
  const id = stateChangedEventId(change.customerId, change.sequence);
  const wrote = await putDerivedEvent(
    table,
    { kind: 'customer', id: change.customerId, organizationId: change.organizationId },
    change.at,
    { type: STATE_CHANGED, data: state },
    id,
    change.correlationId,
  );
  if (wrote) {
    logInfo('webhook customer state written', {
      correlation_id: change.correlationId,
      event_id: id,
      customer_id: change.customerId,
      organization_id: change.organizationId,
    });
  }
  return wrote;
}

/**
 * IAM (shared/data/grants.ts): the endpoint lists (`endpointsReader`), and per customer its item,
 * its state's reads and the outbox item's put (`writeStateChanges`).
 */
export const stateChangesAccess = () => [
  ...webhooksAccess.organizationWebhookEndpoints,
  ...catalogAccess.getCustomer,
  ...stateAccess(),
  ...outboxAccess.putDerivedEvent,
];
