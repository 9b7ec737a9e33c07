import { Injectable, Logger } from '@nestjs/common';
import type { RefreshTokenResult, refreshTokenRequestSchema } from '@switchboard/contracts';
import type { z } from 'zod';
import { AuthConnectError } from '../auth-connect.errors';
import { ProviderExchangeError } from '../exchanges/exchange.errors';
import { IntegrationsService } from '../integrations/integrations.service';
import { ProvidersService } from '../providers/providers.service';
import { refreshCredentials } from './refresh-credentials';

export type RefreshTokenRequest = z.infer<typeof refreshTokenRequestSchema>;

@Injectable()
export class TokenRefreshService {
  private readonly logger = new Logger('TokenRefresh');

  constructor(
    private readonly integrations: IntegrationsService,
    private readonly providers: ProvidersService,
  ) {}

  /** The vault's refresh call: resolve the integration, perform the provider exchange, hand back the result. */
  async refresh(req: RefreshTokenRequest): Promise<RefreshTokenResult> {
    const integration = await this.integrations.resolveInternal(req.environmentId, req.providerConfigKey);
    const provider = this.providers.find(integration.provider);
    if (!provider)
      throw new AuthConnectError(
        'unknown_provider_template',
        `Provider "${integration.provider}" is not in the catalog`,
      );
    const started = Date.now();
    try {
      const result = await refreshCredentials({
        provider,
        integration,
        credentials: req.credentials,
        connectionConfig: req.connectionConfig,
      });
      this.logger.log(
        `refreshed ${req.credentials.type} credentials of ${req.providerConfigKey}/${req.connectionId} in ${Date.now() - started} ms`,
      );
      return result;
    } catch (error) {
      if (error instanceof ProviderExchangeError) {
        // The message is already redacted; the status and OAuth error code are what an operator needs.
        const { providerStatus, providerError, failure } = error.details;
        this.logger.warn(
          `refresh of ${req.providerConfigKey}/${req.connectionId} failed (${failure}${providerStatus ? `, HTTP ${providerStatus}` : ''}${providerError ? `, ${providerError}` : ''})`,
        );
      }
      throw error;
    }
  }
}
