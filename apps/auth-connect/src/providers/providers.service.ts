import { Inject, Injectable } from '@nestjs/common';
import type { ApiProvider } from '@switchboard/contracts';
import { loadCatalog, type ProviderCatalog, type ResolvedProvider } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';

export const logoUrl = (serverUrl: string, provider: string): string =>
  `${serverUrl.replace(/\/$/, '')}/images/template-logos/${encodeURIComponent(provider)}.svg`;

/** The provider catalog: built in, plus the operator's own file; loaded once at boot, a bad file fails boot. */
@Injectable()
export class ProvidersService {
  private readonly catalog: ProviderCatalog;
  /** The API shape of every provider, built once at boot (the catalog is immutable), so a list copies nothing. */
  private readonly api: ReadonlyMap<string, ApiProvider>;

  constructor(@Inject(AUTH_CONNECT_ENV) private readonly env: AuthConnectEnv) {
    this.catalog = loadCatalog({ overridesFile: env.SWITCHBOARD_PROVIDERS_FILE });
    this.api = new Map(this.catalog.list().map((provider) => [provider.name, this.toApi(provider)]));
  }

  find(name: string): ResolvedProvider | undefined {
    return this.catalog.get(name);
  }

  list(search?: string): ApiProvider[] {
    return this.catalog.list(search).map((p) => this.api.get(p.name)!);
  }

  get(name: string): ApiProvider {
    const provider = this.api.get(name);
    if (!provider) throw new AuthConnectError('not_found', `Provider "${name}" does not exist`);
    return provider;
  }

  private toApi(provider: ResolvedProvider): ApiProvider {
    return { ...provider, logo_url: logoUrl(this.env.SWITCHBOARD_SERVER_URL, provider.name) } as ApiProvider;
  }
}
