/**
 * Stored records → response objects of the OpenAPI document. Every nullable
 * field is present (null when empty), as the strict official clients require.
 */

import type {
  CustomerRecord,
  OrganizationRecord,
  PriceRecord,
  ProductRecord,
  SubscriptionRecord,
  WalletRecord,
  WebhookEndpointRecord,
} from '../data/records.ts';
import type {
  CustomerOrganization,
  CustomerSubscription,
  CustomerWallet,
  Product,
  ProductPrice,
  Subscription,
  SubscriptionCustomer,
  WebhookEndpoint,
} from '../generated/api-types.ts';

/** One meter's usage in a subscription's current period. */
export type SubscriptionMeter = Subscription['meters'][number];

export function presentCustomer(customer: Omit<CustomerRecord, 'wallet_count'>): SubscriptionCustomer {
  return {
    id: customer.id,
    created_at: customer.created_at,
    modified_at: customer.modified_at,
    metadata: customer.metadata,
    external_id: customer.external_id,
    email: customer.email,
    email_verified: customer.email_verified,
    type: customer.type,
    name: customer.name,
    billing_name: customer.billing_name,
    billing_address: customer.billing_address,
    tax_id: customer.tax_id,
    locale: customer.locale,
    organization_id: customer.organization_id,
    default_payment_method_id: null,
    deleted_at: customer.deleted_at,
    first_user_event_at: null,
    avatar_url: null,
  } as SubscriptionCustomer;
}

export function presentPrice(price: PriceRecord, product: ProductRecord): ProductPrice {
  return {
    created_at: price.created_at,
    modified_at: price.modified_at,
    id: price.id,
    source: 'catalog',
    amount_type: price.amount_type,
    price_currency: price.price_currency,
    tax_behavior: price.tax_behavior ?? null,
    is_archived: price.is_archived,
    product_id: product.id,
    ...(price.amount_type === 'fixed'
      ? { price_amount: price.price_amount }
      : {
          unit_amount: price.unit_amount,
          cap_amount: price.cap_amount,
          meter_id: price.meter_id,
          meter: price.meter,
        }),
    // Fields older clients still read; `legacy` is false because the interval lives on the product.
    type: product.recurring_interval ? 'recurring' : 'one_time',
    recurring_interval: product.recurring_interval,
    legacy: false,
  } as ProductPrice;
}

export function presentProduct(product: ProductRecord): Product {
  return {
    id: product.id,
    created_at: product.created_at,
    modified_at: product.modified_at,
    trial_interval: null,
    trial_interval_count: null,
    name: product.name,
    description: product.description,
    visibility: product.visibility,
    recurring_interval: product.recurring_interval,
    recurring_interval_count: product.recurring_interval_count,
    meter_interval: null,
    meter_interval_count: null,
    is_recurring: product.recurring_interval !== null,
    is_archived: product.is_archived,
    organization_id: product.organization_id,
    metadata: product.metadata,
    // Live prices only; archived ones still show in the subscriptions billed on them.
    prices: product.prices.filter((price) => !price.is_archived).map((price) => presentPrice(price, product)),
    benefits: [],
    medias: [],
    attached_custom_fields: [],
  } as Product;
}

/**
 * The fields an organization's and a customer's view of a subscription share. `meters`: its usage
 * in the current period (`shared/services/subscription-meters.ts`), read by Get / List Subscriptions
 * and the portal's; the answers and webhook events of writes carry `[]` (docs/compatibility.md).
 */
function subscriptionFields(
  subscription: SubscriptionRecord,
  product: ProductRecord,
  meters: SubscriptionMeter[] = [],
) {
  const billed = new Set(subscription.price_ids);
  return {
    created_at: subscription.created_at,
    modified_at: subscription.modified_at,
    id: subscription.id,
    amount: subscription.amount,
    currency: subscription.currency,
    recurring_interval: subscription.recurring_interval,
    recurring_interval_count: subscription.recurring_interval_count,
    status: subscription.status,
    current_period_start: subscription.current_period_start,
    current_period_end: subscription.current_period_end,
    current_meter_period_start: null,
    current_meter_period_end: null,
    trial_start: null,
    trial_end: null,
    cancel_at_period_end: subscription.cancel_at_period_end,
    canceled_at: subscription.canceled_at,
    started_at: subscription.started_at,
    ends_at: subscription.ends_at,
    ended_at: subscription.ended_at,
    past_due_at: null,
    pause_at_period_end: false,
    paused_at: null,
    resumes_at: null,
    customer_id: subscription.customer_id,
    product_id: subscription.product_id,
    discount_id: null,
    checkout_id: null,
    seats: null,
    customer_cancellation_reason: subscription.customer_cancellation_reason,
    customer_cancellation_comment: subscription.customer_cancellation_comment,
    prices: product.prices
      .filter((price) => billed.has(price.id))
      .map((price) => presentPrice(price, product)),
    meters,
    pending_update: null,
  };
}

export function presentSubscription(
  subscription: SubscriptionRecord,
  customer: CustomerRecord,
  product: ProductRecord,
  meters: SubscriptionMeter[] = [],
): Subscription {
  return {
    ...subscriptionFields(subscription, product, meters),
    metadata: subscription.metadata,
    custom_field_data: {},
    customer: presentCustomer(customer),
    product: presentProduct(product),
    discount: null,
  } as Subscription;
}

/**
 * The organization as its customers see it. Its portal offers cancel and uncancel only: no plan,
 * seat or unit change, no pause, no usage page, no profile changes.
 */
export function presentCustomerOrganization(organization: OrganizationRecord): CustomerOrganization {
  return {
    created_at: organization.created_at,
    modified_at: organization.modified_at,
    id: organization.id,
    name: organization.name,
    slug: organization.slug,
    avatar_url: null,
    proration_behavior: 'prorate',
    allow_customer_updates: false,
    customer_portal_settings: {
      usage: { show: false },
      subscription: { update_seats: false, update_plan: false, update_units: false, pause: false },
      customer: { allow_email_change: false },
    },
    organization_features: { member_model_enabled: false, checkout_localization_enabled: false },
  };
}

/** A subscription as its customer sees it in the portal: no customer, metadata or custom fields. */
export function presentCustomerSubscription(
  subscription: SubscriptionRecord,
  product: ProductRecord,
  organization: OrganizationRecord,
  meters: SubscriptionMeter[] = [],
): CustomerSubscription {
  const { metadata: _metadata, attached_custom_fields: _fields, ...shownProduct } = presentProduct(product);
  return {
    ...subscriptionFields(subscription, product, []),
    // The portal shows a meter's id, name and timestamps only (the hosted CustomerSubscriptionMeterMeter).
    meters: meters.map(({ meter, ...usage }) => ({
      ...usage,
      meter: { created_at: meter.created_at, modified_at: meter.modified_at, id: meter.id, name: meter.name },
    })),
    units: null,
    product: { ...shownProduct, benefits: [], organization: presentCustomerOrganization(organization) },
  } as CustomerSubscription;
}

export function presentWallet(wallet: WalletRecord): CustomerWallet {
  return {
    id: wallet.id,
    created_at: wallet.created_at,
    modified_at: wallet.modified_at,
    customer_id: wallet.customer_id,
    balance: wallet.balance,
    currency: wallet.currency,
  };
}

/** An endpoint as the API shows it, with its signing secret (opened by the caller). */
export function presentWebhookEndpoint(endpoint: WebhookEndpointRecord, secret: string): WebhookEndpoint {
  return {
    id: endpoint.id,
    created_at: endpoint.created_at,
    modified_at: endpoint.modified_at,
    url: endpoint.url,
    name: endpoint.name,
    api_version: '2026-10',
    format: endpoint.format,
    secret,
    organization_id: endpoint.organization_id,
    events: endpoint.events as WebhookEndpoint['events'],
    enabled: endpoint.enabled,
    uses_standard_webhook_signature: true,
    disabled_reason: endpoint.disabled_reason,
    failure_count: endpoint.failure_count,
  };
}
