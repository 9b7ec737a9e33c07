import { createHash, timingSafeEqual } from 'node:crypto';
import type { Credentials } from '@switchboard/contracts';
import type { AuthConnectEnv } from '../config/env';
import type { FlowContext, OAuthClient } from './flow-context.service';

/** What a pending flow keeps encrypted until the provider sends the browser back. */
export interface StateSecrets {
  codeVerifier?: string;
  /** Only an override client is kept; the integration's own is looked up again at the callback. */
  client?: OAuthClient;
  requestToken?: { key: string; secret: string };
  /** SHA-256 of the nonce cookie of the browser this flow belongs to; the callback must present it. */
  browserBinding?: string;
  /** Kept until the flow is bound to a browser (the launch step answers with it). */
  providerUrl?: string;
  /** The @nangohq/frontend WebSocket that hears the outcome (the gateway claimed it for this session). */
  wsClientId?: string;
  /**
   * APP and CUSTOM: the installation the bound browser came back with. Set once; the next return of that browser is
   * the user authorization (PKCE with `codeVerifier`) that must be able to see it.
   */
  installationId?: string;
}

/** What the provider's return brings to the exchange: the flow, its query and the state's secrets. */
export interface CallbackExchange {
  ctx: FlowContext;
  query: Record<string, string>;
  secrets: StateSecrets;
  connectionConfig: Record<string, unknown>;
}

export interface ExchangedCredentials {
  credentials: Credentials;
  extraConfig: Record<string, unknown>;
}

export const stateAad = (id: string) => `auth.oauth_states:${id}:secrets`;

/** A callback that ends in a refusal shown on the result page (its `errorType` is the page's). */
export class CallbackError extends Error {
  constructor(
    readonly errorType: string,
    message: string,
  ) {
    super(message);
  }
}

/** Where providers send the browser back (the gateway's `/oauth/callback`). */
export function callbackUrlOf(env: AuthConnectEnv): string {
  return `${env.SWITCHBOARD_SERVER_URL.replace(/\/$/, '')}/oauth/callback`;
}

/** GitHub App installs (APP, and CUSTOM: GitHub App OAuth): checked by a user authorization of their own. */
export function isGithubApp(mode: string): boolean {
  return mode === 'APP' || mode === 'CUSTOM';
}

/** Whether the browser nonce is the one the flow was bound to (SHA-256, compared in constant time). */
export function sameBinding(binding: string | undefined, nonce: string | undefined): boolean {
  if (!binding || !nonce) return false;
  const presented = createHash('sha256').update(nonce).digest();
  const expected = Buffer.from(binding, 'base64url');
  return expected.length === presented.length && timingSafeEqual(expected, presented);
}
