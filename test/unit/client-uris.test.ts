import { describe, expect, it } from 'vitest';
import { isLoopback, redirectUriProblem, webUrlProblem } from '#shared/domain/client-uris.ts';

describe('redirectUriProblem', () => {
  it.each([
    'https://app.example/cb',
    'HTTPS://APP.EXAMPLE:8443/cb?x=1',
    'http://localhost:8080/cb',
    'http://127.0.0.1/cb',
    'http://[::1]:9/cb',
    'myapp://callback',
    'myapp:///callback',
    'com.example.app:/oauth2redirect',
    'urn:ietf:wg:oauth:2.0:oob',
  ])('accepts %s', (uri) => {
    expect(redirectUriProblem(uri)).toBeUndefined();
  });

  it.each([
    ['https://app.example/cb#x', 'must not contain a fragment'],
    ['javascript:alert(1)', 'uses a scheme that is not allowed (javascript:)'],
    ['DATA:text/html,x', 'uses a scheme that is not allowed (data:)'],
    ['https:///callback', 'names no host'],
    ['https:callback', 'names no host'],
    ['http:///127.0.0.1/cb', 'names no host'],
    ['https://:8443/cb', 'is not a usable URL'],
    ['https://user@app.example/cb', 'must not contain user information'],
    ['https://app.example@evil.example/cb', 'must not contain user information'],
    ['http://app.example/cb', 'must use https unless it points to localhost or a loopback address'],
    ['http://999.999.999.999/cb', 'is not a usable URL'],
  ])('refuses %s: %s', (uri, problem) => {
    expect(redirectUriProblem(uri)).toBe(problem);
  });
});

describe('webUrlProblem (client_uri, logo_uri, tos_uri, policy_uri)', () => {
  it.each([
    'https://app.example',
    'https://app.example/logo.png?v=2#top',
    'HTTPS://APP.EXAMPLE/',
    'https://xn--bcher-kva.example/%C3%BC',
    'http://localhost:3000/tos',
    'http://127.0.0.1/policy',
    'http://[::1]/',
  ])('accepts %s', (uri) => {
    expect(webUrlProblem(uri)).toBeUndefined();
  });

  it.each([
    'javascript:alert(1)',
    'data:text/html;base64,PHNjcmlwdD4=',
    'vbscript:msgbox(1)',
    'file:///etc/passwd',
    'ftp://app.example/',
    'wss://app.example/',
    'myapp://callback',
    'http://app.example/',
    'not a url',
    'https://app.example/ü',
    'https://app.example/%zz',
    'https://app .example/',
    '//app.example/',
    '',
  ])('refuses %j', (uri) => {
    expect(webUrlProblem(uri)).toBe(
      'must be an absolute https URL (http only for localhost or a loopback address)',
    );
  });

  it.each([
    ['https:///logo.png', 'names no host'],
    ['https:app.example', 'names no host'],
    ['https://:443/', 'names no host'],
    ['https://user:secret@app.example/', 'must not contain user information'],
    ['https://app.example:99999/', 'is not a usable URL'],
  ])('refuses %s: %s', (uri, problem) => {
    expect(webUrlProblem(uri)).toBe(problem);
  });
});

describe('isLoopback', () => {
  it('knows localhost, 127/8 and ::1, and nothing that only looks like them', () => {
    for (const host of ['localhost', 'LOCALHOST', '127.0.0.1', '127.255.0.9', '[::1]', '::1']) {
      expect(isLoopback(host), host).toBe(true);
    }
    for (const host of ['localhost.example', '127.0.0.1.evil.example', '10.0.0.1', '[::2]', '0.0.0.0']) {
      expect(isLoopback(host), host).toBe(false);
    }
  });
});
