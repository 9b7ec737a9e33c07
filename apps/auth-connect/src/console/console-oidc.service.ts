import { Inject, Injectable } from '@nestjs/common';
import type {
  ConsoleConfig,
  consoleOidcFinishRequestSchema,
  consoleOidcStartRequestSchema,
  VerifiedConsoleSession,
} from '@switchboard/contracts';
import * as oidc from 'openid-client';
import type { z } from 'zod';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';
import { ConsoleService } from './console.service';

/**
 * Console sign-in with the installation's OpenID Connect provider (openid-client): authorization code with
 * PKCE, state and nonce, the ID token checked by the library (signature from the provider's JWKS, issuer,
 * audience, expiry, nonce). The provider must vouch for a verified email, which must belong to an existing
 * console user: the provider proves who someone is, the console's admins decide what they may do.
 */
@Injectable()
export class ConsoleOidcService {
  private configuration: Promise<oidc.Configuration> | undefined;

  constructor(
    @Inject(AUTH_CONNECT_ENV) private readonly env: AuthConnectEnv,
    private readonly console: ConsoleService,
  ) {
    if (env.SWITCHBOARD_CONSOLE_OIDC_ISSUER && !env.SWITCHBOARD_CONSOLE_OIDC_CLIENT_ID) {
      throw new Error('SWITCHBOARD_CONSOLE_OIDC_CLIENT_ID is required with SWITCHBOARD_CONSOLE_OIDC_ISSUER');
    }
  }

  /** What the sign-in page offers: the button shows only when a provider is configured. */
  describe(): ConsoleConfig {
    return {
      oidc: {
        enabled: this.env.SWITCHBOARD_CONSOLE_OIDC_ISSUER !== undefined,
        label: this.env.SWITCHBOARD_CONSOLE_OIDC_LABEL,
      },
    };
  }

  async start(request: z.infer<typeof consoleOidcStartRequestSchema>): Promise<{ url: string }> {
    const config = await this.config();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: request.redirectUri,
      scope: this.env.SWITCHBOARD_CONSOLE_OIDC_SCOPES,
      state: request.state,
      nonce: request.nonce,
      code_challenge: request.codeChallenge,
      code_challenge_method: 'S256',
    });
    return { url: url.href };
  }

  async finish(request: z.infer<typeof consoleOidcFinishRequestSchema>): Promise<VerifiedConsoleSession> {
    const config = await this.config();
    let claims: oidc.IDToken | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, new URL(request.callbackUrl), {
        pkceCodeVerifier: request.codeVerifier,
        expectedState: request.state,
        expectedNonce: request.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch {
      // The library's reasons (a refused code, a bad signature, a wrong nonce) are not the browser's business.
      throw new AuthConnectError('invalid_credentials', 'The identity provider did not confirm this sign-in');
    }
    if (typeof claims?.email !== 'string' || claims.email_verified !== true) {
      throw new AuthConnectError('invalid_credentials', 'The identity provider gave no verified email');
    }
    return this.console.signInVouched(claims.email, request.tokenHash);
  }

  /** Discovered once, on first use; a failed discovery is tried again on the next sign-in. */
  private config(): Promise<oidc.Configuration> {
    const issuer = this.env.SWITCHBOARD_CONSOLE_OIDC_ISSUER;
    if (!issuer) {
      return Promise.reject(
        new AuthConnectError('feature_disabled', 'Sign-in with an identity provider is not configured'),
      );
    }
    this.configuration ??= oidc
      .discovery(
        new URL(issuer),
        this.env.SWITCHBOARD_CONSOLE_OIDC_CLIENT_ID!,
        this.env.SWITCHBOARD_CONSOLE_OIDC_CLIENT_SECRET,
      )
      .catch((error: unknown) => {
        this.configuration = undefined;
        throw new AuthConnectError(
          'service_unavailable',
          `The identity provider could not be reached: ${(error as Error).message}`,
        );
      });
    return this.configuration;
  }
}
