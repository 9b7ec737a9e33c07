import { envFragments, parseEnv } from '@switchboard/config';
import { z } from 'zod';

export const envSchema = z.object({
  PORT: envFragments.port(3010),
  ...envFragments.nats,
  ...envFragments.database,
  ...envFragments.logging,
  ...envFragments.publicUrls,
  ...envFragments.masterKeys,
  ...envFragments.onEvent,
  /** An operator's YAML file of extra or replaced providers (same schema as the built-in catalog). */
  SWITCHBOARD_PROVIDERS_FILE: z.string().optional(),
  /** The connect page (what SWITCHBOARD_CONNECT_URL points at) is served on its own port; 0 = any free one (tests). */
  CONNECT_PORT: z.coerce.number().int().min(0).max(65535).default(3009),
  CONNECT_HOST: z.string().default('0.0.0.0'),
  /**
   * Exceptions to the egress policy for calls to providers (token endpoints, credential checks), as for the
   * proxy: comma list of fully qualified host names or IPs/CIDRs. Private and loopback addresses are refused otherwise.
   */
  SWITCHBOARD_EGRESS_ALLOW: z.string().default(''),
  /** Token, refresh and verification calls' own list; when set (even empty) it replaces SWITCHBOARD_EGRESS_ALLOW. */
  SWITCHBOARD_TOKEN_EGRESS_ALLOW: z.string().optional(),
  /** A console session unused this long (seconds) ends; default 12 h. */
  SWITCHBOARD_CONSOLE_IDLE_TIMEOUT_S: z.coerce.number().int().min(60).max(2_592_000).default(43_200),
  /** A console session ends this long (seconds) after sign-in, used or not; default 7 days. */
  SWITCHBOARD_CONSOLE_SESSION_MAX_AGE_S: z.coerce.number().int().min(60).max(31_536_000).default(604_800),
  /**
   * Optional sign-in with an OpenID Connect provider: its issuer URL (discovery at
   * `/.well-known/openid-configuration`), and this installation's client there. A person signs in when the
   * provider vouches for a verified email that belongs to an existing console user; nobody is created.
   */
  SWITCHBOARD_CONSOLE_OIDC_ISSUER: z.url().optional(),
  SWITCHBOARD_CONSOLE_OIDC_CLIENT_ID: z.string().min(1).optional(),
  SWITCHBOARD_CONSOLE_OIDC_CLIENT_SECRET: z.string().min(1).optional(),
  SWITCHBOARD_CONSOLE_OIDC_SCOPES: z.string().default('openid email'),
  /** The words of the sign-in page's button for the provider. */
  SWITCHBOARD_CONSOLE_OIDC_LABEL: z.string().trim().min(1).max(60).default('Sign in with SSO'),
});
export type AuthConnectEnv = z.infer<typeof envSchema>;

export const AUTH_CONNECT_ENV = Symbol('AUTH_CONNECT_ENV');
export const loadEnv = (): AuthConnectEnv => parseEnv(envSchema);
