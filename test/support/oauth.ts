/**
 * The OAuth flow through the API itself, for the integration suites: register a client, consent
 * with a personal access token, exchange the code, refresh. Every step is a real request to its
 * operation's handler (each under its own policy), so a suite that needs tokens gets them the way a
 * client would.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import { type AdminContext, createPersonalAccessToken, createUser } from '#scripts/admin/commands.ts';
import type { Table } from '#shared/data/dynamo.ts';
import { CAPS } from '#shared/domain/limits.ts';
import type { CallOptions, Reply } from './world.ts';

type Call = (method: string, url: string, options?: CallOptions) => Promise<Reply>;

export const REDIRECT_URI = 'https://app.example/cb';

export interface RegisteredClient {
  client_id: string;
  client_secret?: string;
  registration_access_token: string;
  token_endpoint_auth_method: 'client_secret_basic' | 'client_secret_post' | 'none';
  grant_types: string[];
}

export interface Tokens {
  access_token: string;
  refresh_token?: string;
  scope: string;
  expires_in: number;
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/**
 * A registration's metadata as a client sends it back to keep it as it is (RFC 7592 §2.2: the whole
 * metadata), without what the server issued (secret, times, registration token and URI).
 */
export function registrationMetadata(registration: object): Record<string, unknown> {
  const {
    client_secret: _secret,
    client_secret_expires_at: _expires,
    client_id_issued_at: _issued,
    registration_access_token: _token,
    registration_client_uri: _uri,
    ...metadata
  } = registration as Record<string, unknown>;
  return metadata;
}

/**
 * Personal access tokens (user:write) to register clients with, for a suite that registers more
 * than one user may (`CAPS.oauthClients`): each call answers one, a new user's every
 * `CAPS.oauthClients.limit` calls. Who registered a client matters to no flow: any user may consent.
 */
export function registrants(admin: AdminContext): () => Promise<string> {
  let calls = 0;
  let current: Promise<string> | undefined;
  const next = async () => {
    const user = await createUser(admin, { email: `registrant-${randomUUID()}@x.example` });
    return (await createPersonalAccessToken(admin, { userId: user.id, scope: 'user:write' })).token;
  };
  return () => {
    // Counted and replaced before any wait: concurrent calls share a user, never pass its cap.
    if (calls++ % CAPS.oauthClients.limit === 0) current = next();
    return current as Promise<string>;
  };
}

export async function registerClient(
  call: Call,
  pat: string,
  metadata: Record<string, unknown> = {},
): Promise<RegisteredClient> {
  const reply = await call('POST', '/v1/oauth2/register', {
    token: pat,
    body: {
      redirect_uris: [REDIRECT_URI],
      client_name: 'OAuth flow',
      scope: 'openid email products:read subscriptions:write',
      ...metadata,
    },
  });
  expect(reply.status).toBe(201);
  return reply.body;
}

/** The code a consent of `pat`'s user sends to the client's redirect URI. */
export async function authorizationCode(
  call: Call,
  pat: string,
  client: RegisteredClient,
  options: { challenge: string; scope?: string; organization_id?: string; redirect_uri?: string | null },
): Promise<string> {
  const reply = await call('POST', '/v1/oauth2/consent', {
    token: pat,
    body: {
      action: 'allow',
      response_type: 'code',
      client_id: client.client_id,
      ...(options.redirect_uri === null ? {} : { redirect_uri: options.redirect_uri ?? REDIRECT_URI }),
      scope: options.scope ?? 'openid email products:read',
      code_challenge: options.challenge,
      code_challenge_method: 'S256',
      ...(options.organization_id ? { organization_id: options.organization_id } : {}),
    },
  });
  expect(reply.status).toBe(303);
  const code = new URL(reply.headers.location as string).searchParams.get('code');
  if (!code) throw new Error(`the consent sent no code: ${reply.headers.location}`);
  return code;
}

/** A form request to one of the client-authenticated endpoints, authenticated as the client registered. */
export function clientRequest(
  client: RegisteredClient,
  parameters: Record<string, string>,
  method: RegisteredClient['token_endpoint_auth_method'] = client.token_endpoint_auth_method,
): CallOptions {
  const form = new URLSearchParams(parameters);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (method === 'client_secret_basic') {
    const encode = (value: string) => encodeURIComponent(value).replaceAll('%20', '+');
    const pair = `${encode(client.client_id)}:${encode(client.client_secret ?? '')}`;
    headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
  } else {
    form.set('client_id', client.client_id);
    if (method === 'client_secret_post') form.set('client_secret', client.client_secret ?? '');
  }
  return { headers, body: form.toString() };
}

export const tokenRequest = (call: Call, client: RegisteredClient, parameters: Record<string, string>) =>
  call('POST', '/v1/oauth2/token', clientRequest(client, parameters));

/** Consent and code exchange: the tokens a client gets for `pat`'s user. */
export async function issueTokens(
  call: Call,
  pat: string,
  client: RegisteredClient,
  options: { scope?: string; organization_id?: string } = {},
): Promise<Tokens> {
  const { verifier, challenge } = pkce();
  const code = await authorizationCode(call, pat, client, { challenge, ...options });
  const reply = await tokenRequest(call, client, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
}

/** Moves an item's `expires_at` (a code's, a token's) a second into the past, as time would. */
export async function expireItem(table: Table, key: { PK: string; SK: string }): Promise<void> {
  await table.doc.send(
    new UpdateCommand({
      TableName: table.name,
      Key: key,
      UpdateExpression: 'SET expires_at = :past',
      ExpressionAttributeValues: { ':past': new Date(Date.now() - 1000).toISOString() },
    }),
  );
}
