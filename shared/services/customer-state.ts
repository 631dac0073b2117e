/**
 * Get Customer State (by id, by external id): a live customer of the caller's organizations with its
 * active subscriptions, its granted benefits and its customer meters, as the hosted service's
 * `CustomerState`.
 *
 * - **Active subscriptions**: the customer's subscriptions whose status is `active` or `trialing`
 *   (the hosted service's `SubscriptionStatus.active_statuses()`; `past_due` is not active here,
 *   unlike List Subscriptions' `active=true`), from the customer's subscription list, oldest first.
 *   Their `meters` are Get Subscription's (`subscriptionMetersFrom`, shared/services/subscription-meters.ts)
 *   without the meter each embeds: folded from the meters and customer meters read below, with
 *   the subscriptions' products read by key for their metered prices.
 * - **Granted benefits**: `[]`, this API has no benefits.
 * - **Active meters**: every customer meter of the customer (as the hosted service, archived meters'
 *   too), oldest first: the customer with each of its organization's meters, read by key, and each
 *   one's totals folded exactly as Get Customer Meter folds them (`totalsOf`,
 *   `shared/services/customer-meters.ts`).
 *
 * **Bounded, exact or refused.** One request reads at most `LIST_READ_UNITS` (500) read units in
 * all (`ReadBudget`): the organization's meter entries, the subscription list's segments, one unit
 * per customer meter read by key, the subscriptions' products, and every usage Query (the customer
 * meters' over all time, the subscription meters' over their periods). It also reads at most
 * `MAX_STATE_SUBSCRIPTIONS` active subscriptions and `MAX_STATE_METERS` meters of the organization.
 * A customer past any of these is a 422 `PolarRequestValidationError` at the path parameter naming
 * the paged reads that serve it (List Subscriptions, List Customer Meters): never a partial state.
 */
import { access as catalogAccess } from '../data/catalog.ts';
import {
  type CustomerMeterRecord,
  customerMeterId,
  access as customerMetersAccess,
  organizationMetersWithin,
  readCustomerMeters,
  readUsage,
} from '../data/customer-meters.ts';
import { access as customersAccess, type CustomerState as StoredCustomer } from '../data/customers.ts';
import type { Table } from '../data/dynamo.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { LIST_READ_UNITS, ListReadTooCostly, ReadBudget } from '../data/listing.ts';
import { access as productsAccess, readProductsWithin } from '../data/products.ts';
import type { SubscriptionRecord } from '../data/records.ts';
import { customerSubscriptionsWithStatus, access as subscriptionsAccess } from '../data/subscriptions.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { PolarRequestValidationError } from '../domain/errors.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type {
  CustomerState,
  CustomerStateMeter,
  CustomerStateSubscription,
  CustomerStateSubscriptionMeter,
} from '../generated/api-types.ts';
import { logError } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { type CustomerLocator, findLiveCustomer } from './customer-lookup.ts';
import { totalsOf } from './customer-meters.ts';
import { presentCustomer, type SubscriptionMeter } from './presenters.ts';
import { subscriptionMetersFrom } from './subscription-meters.ts';

/** The statuses of an active subscription (the hosted service's `active_statuses`). */
export const STATE_STATUSES: readonly string[] = ['active', 'trialing'];
/** Active subscriptions one state may hold. */
export const MAX_STATE_SUBSCRIPTIONS = 100;
/** Meters of the customer's organization one state may read (one customer meter by key each). */
export const MAX_STATE_METERS = 200;

const READ_UNIT_BYTES = 4 * 1024;

/** The customer's state does not fit one request: a 422 at the path parameter that named it. */
function tooLarge(locator: CustomerLocator, why: string): PolarRequestValidationError {
  const byExternal = 'externalId' in locator;
  return new PolarRequestValidationError([
    {
      loc: ['path', byExternal ? 'external_id' : 'id'],
      msg: `This customer's state is larger than one request may read (${why}): read its subscriptions with List Subscriptions (customer_id, status=active, status=trialing) and its meters with List Customer Meters (customer_id).`,
      type: 'value_error',
      input: byExternal ? locator.externalId : locator.id,
    },
  ]);
}

function presentStateSubscription(
  subscription: SubscriptionRecord,
  meters: readonly SubscriptionMeter[],
): CustomerStateSubscription {
  return {
    id: subscription.id,
    created_at: subscription.created_at,
    modified_at: subscription.modified_at,
    custom_field_data: {},
    metadata: subscription.metadata,
    status: subscription.status as CustomerStateSubscription['status'],
    amount: subscription.amount,
    currency: subscription.currency,
    recurring_interval: subscription.recurring_interval,
    current_period_start: subscription.current_period_start,
    current_period_end: subscription.current_period_end,
    trial_start: null,
    trial_end: null,
    cancel_at_period_end: subscription.cancel_at_period_end,
    canceled_at: subscription.canceled_at,
    started_at: subscription.started_at,
    ends_at: subscription.ends_at,
    product_id: subscription.product_id,
    discount_id: null,
    seats: null,
    units: null,
    // Get Subscription's meters, without the meter each embeds (the hosted `CustomerStateSubscriptionMeter`).
    meters: meters.map(
      ({ meter: _meter, ...figures }): CustomerStateSubscriptionMeter =>
        figures as CustomerStateSubscriptionMeter,
    ),
  } as CustomerStateSubscription;
}

const byCreation = (a: { created_at: string; id: string }, b: { created_at: string; id: string }) => {
  const at = Date.parse(a.created_at) - Date.parse(b.created_at);
  return at !== 0 ? at : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
};

/**
 * A state past the read bound (see above), with why: Get Customer State answers it as the 422 at
 * its path parameter; the `customer.state_changed` webhook sends nothing for that change
 * (`shared/webhooks/customer-state-events.ts`).
 */
export class StateTooLarge extends Error {
  constructor(readonly why: string) {
    super(`customer state over the read bound: ${why}`);
  }
}

export async function getCustomerState(
  deps: Dependencies,
  principal: UserPrincipal,
  locator: CustomerLocator,
): Promise<CustomerState> {
  const customer = await findLiveCustomer(deps, principal, locator);
  try {
    return await customerStateOf(deps.table, customer, deps.now());
  } catch (error) {
    if (!(error instanceof StateTooLarge)) throw error;
    throw tooLarge(locator, error.why);
  }
}

/**
 * The state of a live customer at `now` (its subscriptions' current periods), exact, or
 * `StateTooLarge` past the read bound (never a partial state). What Get Customer State answers and
 * the `customer.state_changed` webhook carries.
 */
export async function customerStateOf(
  table: Table,
  customer: StoredCustomer,
  now: Date,
): Promise<CustomerState> {
  // The customer's own read (at most a few units) is left out of the budget, as the token's.
  const budget = new ReadBudget(LIST_READ_UNITS * READ_UNIT_BYTES);
  try {
    const [subscriptions, organization] = await Promise.all([
      customerSubscriptionsWithStatus(
        table,
        customer.organization_id,
        customer.id,
        STATE_STATUSES,
        MAX_STATE_SUBSCRIPTIONS + 1,
        budget,
      ),
      organizationMetersWithin(table, customer.organization_id, MAX_STATE_METERS, budget),
    ]);
    if (subscriptions.length > MAX_STATE_SUBSCRIPTIONS) {
      throw new StateTooLarge(`more than ${MAX_STATE_SUBSCRIPTIONS} active subscriptions`);
    }
    if (organization.more) {
      throw new StateTooLarge(`its organization has more than ${MAX_STATE_METERS} meters`);
    }
    const meters = new Map(organization.meters.map((meter) => [meter.id, meter]));
    const ids = organization.meters.map((meter) => customerMeterId(customer.id, meter.id));
    // Each customer meter read by key is one unit (an item of about 0.3 KB): taken from what is left.
    const left = budget.bytes - budget.spentBytes - ids.length * READ_UNIT_BYTES;
    if (left < READ_UNIT_BYTES) throw new ListReadTooCostly('size', 0);
    // The rest: the subscriptions' products (their prices name the meters), then every usage Query.
    const rest = new ReadBudget(left);
    const [found, products] = await Promise.all([
      ids.length > 0
        ? readCustomerMeters(table, ids)
        : Promise.resolve(new Map<string, CustomerMeterRecord>()),
      readProductsWithin(
        table,
        subscriptions.map((subscription) => subscription.product_id),
        rest,
      ),
    ]);
    const records = [...found.values()].sort(byCreation);
    const subscribed = subscriptions.map((subscription) => {
      const product = products.get(subscription.product_id);
      // Soft-deleted, never removed: a missing one is a broken table, not a client error.
      if (!product) throw new Error(`subscription ${subscription.id} refers to a missing product`);
      return { subscription, product };
    });
    const [activeMeters, subscriptionMeters] = await Promise.all([
      Promise.all(
        records.map(async (record): Promise<CustomerStateMeter> => {
          const meter = meters.get(record.meter_id);
          if (!meter) throw new Error(`customer meter ${record.id} of no meter read`);
          const usage = await readUsage(table, record, meter, rest);
          return {
            id: record.id,
            created_at: record.created_at,
            modified_at: null,
            meter_id: record.meter_id,
            ...totalsOf(meter, usage),
          };
        }),
      ),
      // As Get Subscription folds them, from the meters and customer meters read above.
      subscriptionMetersFrom(table, subscribed, { meters, customerMeters: found }, now, rest),
    ]);
    return {
      ...presentCustomer(customer),
      active_subscriptions: subscriptions.map((subscription) =>
        presentStateSubscription(subscription, subscriptionMeters.get(subscription.id) ?? []),
      ),
      granted_benefits: [],
      active_meters: activeMeters,
    } as CustomerState;
  } catch (error) {
    if (!(error instanceof ListReadTooCostly)) throw error;
    // Past the read bound: an exact state or none (the roll-up that removes it: docs/data-model.md).
    logError('customer state over the read bound', { customer_id: customer.id });
    throw new StateTooLarge(`more than ${LIST_READ_UNITS} read units of subscriptions and usage`);
  }
}

/** The reads of one customer's state (`customerStateOf`), for the functions that compute it. */
export const stateAccess = () => [
  ...subscriptionsAccess.customerSubscriptionsWithStatus,
  ...customerMetersAccess.organizationMetersWithin,
  // Two batches by key, beside each other: the customer meters, the subscriptions' products (two
  // statements: the aggregator's own batch of customer meters is the first one, which IAM merges).
  ...customerMetersAccess.readCustomerMeters,
  ...productsAccess.readProductsWithin,
  // The subscriptions' usage in their periods (`customerMetersAccess.readPeriodUsage`) is the same
  // statement as the customer meters' usage (Query, `customerMeter`), granted by it.
  ...customerMetersAccess.readUsage,
];

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => {
  const state = stateAccess();
  return {
    getCustomerState: {
      table: [
        ...tokensAccess.findAccessToken,
        oneStatement(tokensAccess.findToken, catalogAccess.getCustomer),
        ...state,
      ],
    },
    getCustomerStateExternal: {
      table: [
        ...tokensAccess.findToken,
        ...tokensAccess.findAccessToken,
        ...customersAccess.findCustomersByExternalId,
        ...state,
      ],
    },
  };
};
