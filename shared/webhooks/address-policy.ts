/**
 * Where webhook deliveries may go, as a setting: a module of its own so that every function's
 * wiring (`shared/runtime.ts`) can name the deployed policy without bundling the guard itself
 * (`address-guard.ts`: the special-purpose ranges it parses at load), which only the functions that
 * check or send to an endpoint URL need.
 */

export interface AddressPolicy {
  /** Loopback addresses and `localhost` names pass (a developer's receiver on 127.0.0.1). */
  allowLoopback: boolean;
}

/** What the deployed stack enforces, and the default everywhere. */
export const DEPLOYED_ADDRESS_POLICY: AddressPolicy = Object.freeze({ allowLoopback: false });
