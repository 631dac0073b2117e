/**
 * The one address guard (shared/webhooks/address-guard.ts) against a table of addresses and URLs
 * written from the IANA special-purpose registries and the cloud metadata services, not from the
 * module's own ranges; and the loopback allowance, off unless asked for.
 */
import { describe, expect, it } from 'vitest';
import { DEPLOYED_WEBHOOK_SETTINGS, productionDependencies } from '#shared/runtime.ts';
import {
  addressAllowed,
  addressGuard,
  checkWebhookUrl,
  classifyAddress,
} from '#shared/webhooks/address-guard.ts';
import { DEPLOYED_ADDRESS_POLICY } from '#shared/webhooks/address-policy.ts';

const ADDRESSES: [string, string][] = [
  // Public unicast: allowed.
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['52.94.236.248', 'public'],
  ['100.63.255.255', 'public'],
  ['100.128.0.0', 'public'],
  ['172.15.255.255', 'public'],
  ['172.32.0.0', 'public'],
  ['192.169.0.1', 'public'],
  ['2001:4860:4860::8888', 'public'],
  ['2a00:1450:4001:80b::200e', 'public'],
  ['::ffff:8.8.8.8', 'public'],
  ['64:ff9b::808:808', 'public'],
  ['2002:0808:0808::1', 'public'],
  // IPv4 special purpose.
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['100.64.0.1', 'shared'],
  ['100.127.255.254', 'shared'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['169.254.0.1', 'link-local'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.0.0.170', 'reserved'],
  ['192.0.2.10', 'documentation'],
  ['192.88.99.1', 'reserved'],
  ['192.168.1.1', 'private'],
  ['198.18.0.1', 'reserved'],
  ['198.19.255.255', 'reserved'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['224.0.0.251', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'reserved'],
  // Cloud metadata and platform services.
  ['169.254.169.254', 'metadata'],
  ['169.254.170.2', 'metadata'],
  ['168.63.129.16', 'metadata'],
  ['100.100.100.200', 'metadata'],
  ['fd00:ec2::254', 'metadata'],
  ['::ffff:169.254.169.254', 'metadata'],
  // IPv6 special purpose.
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:10.1.1.1', 'private'],
  ['64:ff9b::a00:1', 'private'],
  ['64:ff9b:1::1', 'private'],
  ['2002:7f00:0001::1', 'loopback'],
  ['2002:c0a8:0101::1', 'private'],
  ['::127.0.0.1', 'reserved'],
  ['100::1', 'reserved'],
  ['2001::1', 'reserved'],
  ['2001:db8::1', 'documentation'],
  ['3fff::1', 'documentation'],
  ['fc00::1', 'unique-local'],
  ['fd12:3456:789a::1', 'unique-local'],
  ['fe80::1', 'link-local'],
  ['fec0::1', 'private'],
  ['ff02::1', 'multicast'],
  ['4000::1', 'reserved'],
];

describe('classifyAddress', () => {
  it.each(ADDRESSES)('%s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
    expect(addressAllowed(address)).toBe(kind === 'public');
  });

  it('a scoped IPv6 literal (RFC 4007 zone) is link-local, refused without an exception', () => {
    for (const scoped of ['fe80::1%eth0', '[fe80::1%eth0]', 'fe80::1%25eth0', '2001:4860::8888%1']) {
      expect(classifyAddress(scoped), scoped).toBe('link-local');
      expect(addressAllowed(scoped, { allowLoopback: true }), scoped).toBe(false);
      expect(addressGuard({ allowLoopback: true })(scoped, 6), scoped).toBe(false);
    }
    expect(classifyAddress('10.0.0.1%eth0')).toBeUndefined();
    expect(checkWebhookUrl('http://[fe80::1%25eth0]/', { allowLoopback: true })).toMatchObject({ ok: false });
    expect(checkWebhookUrl('https://[fe80::1%25eth0]/')).toMatchObject({ ok: false });
  });

  it('is not fooled by case, brackets or non-addresses', () => {
    expect(classifyAddress('[FE80::1]')).toBe('link-local');
    expect(classifyAddress('example.com')).toBeUndefined();
    expect(classifyAddress('0x7f.1')).toBeUndefined();
    expect(classifyAddress('')).toBeUndefined();
  });
});

describe('the loopback allowance (a local run)', () => {
  it('is off by default and in the deployed wiring, which no environment variable can change', () => {
    expect(DEPLOYED_ADDRESS_POLICY.allowLoopback).toBe(false);
    expect(addressAllowed('127.0.0.1')).toBe(false);
    expect(addressGuard()('127.0.0.1', 4)).toBe(false);
    const saved = { ...process.env };
    try {
      process.env.WEBHOOK_ALLOW_LOOPBACK = 'true';
      process.env.ALLOW_LOOPBACK = 'true';
      expect(productionDependencies().webhooks).toBe(DEPLOYED_WEBHOOK_SETTINGS);
      expect(DEPLOYED_WEBHOOK_SETTINGS.addresses.allowLoopback).toBe(false);
    } finally {
      process.env = saved;
    }
  });

  it('when given, lets loopback through and nothing else', () => {
    const local = { allowLoopback: true };
    for (const address of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1'])
      expect(addressAllowed(address, local), address).toBe(true);
    for (const address of ['10.0.0.1', '169.254.169.254', '0.0.0.0', 'fe80::1', '::'])
      expect(addressAllowed(address, local), address).toBe(false);
    expect(checkWebhookUrl('http://127.0.0.1:4000/hooks', local)).toEqual({
      ok: true,
      url: 'http://127.0.0.1:4000/hooks',
    });
    expect(checkWebhookUrl('http://localhost:4000/', local)).toMatchObject({ ok: true });
    expect(checkWebhookUrl('https://[::1]:8443/', local)).toMatchObject({ ok: true });
    // Any port on loopback only: a public host keeps to 443 and 80.
    expect(checkWebhookUrl('https://hooks.example.com:8443/', local)).toEqual({
      ok: false,
      type: 'value_error',
      msg: 'Webhook URLs can only use port 443 or 80.',
    });
    expect(checkWebhookUrl('http://hooks.example.com/', local)).toMatchObject({
      ok: false,
      type: 'url_scheme',
    });
    expect(checkWebhookUrl('http://10.0.0.1/', local)).toMatchObject({ ok: false, type: 'url_scheme' });
    expect(checkWebhookUrl('https://10.0.0.1/', local)).toMatchObject({ ok: false, type: 'value_error' });
  });
});

const URLS: [string, string | { url: string }][] = [
  ['https://hooks.example.com/polar', { url: 'https://hooks.example.com/polar' }],
  [' https://Hooks.Example.com:443/a?b=c#d ', { url: 'https://hooks.example.com/a?b=c#d' }],
  ['https://hooks.example.com:80/', { url: 'https://hooks.example.com:80/' }],
  // Only the web's ports: any other names another service of the host.
  ['https://hooks.example.com:8443/', 'value_error'],
  ['https://hooks.example.com:22/', 'value_error'],
  ['https://hooks.example.com:0/', 'value_error'],
  ['https://8.8.8.8:6379/', 'value_error'],
  ['https://[2001:4860::8888]:8080/', 'value_error'],
  ['https://münchen.de/hook', { url: 'https://xn--mnchen-3ya.de/hook' }],
  ['https://8.8.8.8/', { url: 'https://8.8.8.8/' }],
  ['https://[2001:4860::8888]/', { url: 'https://[2001:4860::8888]/' }],
  ['https://example.com./x', { url: 'https://example.com./x' }],
  ['http://hooks.example.com/', 'url_scheme'],
  ['HTTP://hooks.example.com/', 'url_scheme'],
  ['ws://hooks.example.com/', 'url_scheme'],
  ['javascript:alert(1)', 'url_scheme'],
  ['hooks.example.com/x', 'url_parsing'],
  ['https://', 'url_parsing'],
  ['https:hooks.example.com', 'url_parsing'],
  ['https:///hooks.example.com', 'url_parsing'],
  ['https:/\\hooks.example.com', 'url_parsing'],
  ['https://hooks.example.com:99999/', 'url_parsing'],
  ['https://user@hooks.example.com/', 'value_error'],
  ['https://user:pw@hooks.example.com/', 'value_error'],
  ['https://hooks.example.com\\@evil.example/', 'value_error'],
  // Loopback, private and metadata in every spelling WHATWG URL normalises.
  ['https://localhost/', 'value_error'],
  ['https://LOCALHOST./', 'value_error'],
  ['https://api.localhost/', 'value_error'],
  ['https://printer.local/', 'value_error'],
  ['https://metadata.google.internal/', 'value_error'],
  ['https://router.home.arpa/', 'value_error'],
  ['https://127.0.0.1/', 'value_error'],
  ['https://127.1/', 'value_error'],
  ['https://2130706433/', 'value_error'],
  ['https://0177.0.0.1/', 'value_error'],
  ['https://0x7f000001/', 'value_error'],
  ['https://0x7f.1/', 'value_error'],
  ['https://017700000001/', 'value_error'],
  ['https://0/', 'value_error'],
  ['https://0x0a.0.0.1/', 'value_error'],
  ['https://167772161/', 'value_error'],
  ['https://2852039166/', 'value_error'],
  ['https://0xa9fea9fe/', 'value_error'],
  ['https://[::1]/', 'value_error'],
  ['https://[::]/', 'value_error'],
  ['https://[::ffff:127.0.0.1]/', 'value_error'],
  ['https://[::ffff:a9fe:a9fe]/', 'value_error'],
  ['https://[0:0:0:0:0:ffff:0a00:0001]/', 'value_error'],
  ['https://[fd00:ec2::254]/', 'value_error'],
  ['https://[fe80::1]/', 'value_error'],
  ['https://%31%32%37.0.0.1/', 'value_error'],
  ['https://intranet/', 'value_error'],
  // Host names that are no DNS names.
  ['https://exa_mple.com/', 'value_error'],
  ['https://-example.com/', 'value_error'],
  ['https://example-.com/', 'value_error'],
  ['https://a..b.com/', 'value_error'],
  [`https://${'a'.repeat(64)}.com/`, 'value_error'],
  ['https://xn--a.com/', 'url_parsing'],
  [`https://example.com/${'a'.repeat(2070)}`, 'url_too_long'],
];

describe('checkWebhookUrl (as deployed)', () => {
  it.each(
    URLS.map(([url, expected]) => [url.length > 70 ? `${url.slice(0, 40)}…` : url, url, expected] as const),
  )('%s', (_, url, expected) => {
    const result = checkWebhookUrl(url);
    if (typeof expected === 'string') expect(result).toMatchObject({ ok: false, type: expected });
    else expect(result).toEqual({ ok: true, ...expected });
  });
});
