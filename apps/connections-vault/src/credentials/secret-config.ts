import { Inject, Injectable } from '@nestjs/common';
import { loadCatalog, type ProviderCatalog } from '@switchboard/providers';
import { VAULT_ENV, type VaultEnv } from '../config/env';

export interface SplitConfig {
  /** What the `connection_config` column holds and `connections:read` shows. */
  plain: Record<string, unknown>;
  /** Fields the catalog marks `secret: true`: sealed with the credentials. */
  secret: Record<string, unknown>;
}

/**
 * Which connection-config fields of a provider are secrets (the catalog's `connection_config.<field>.secret`),
 * read from the same catalog auth-connect serves (built-in plus `SWITCHBOARD_PROVIDERS_FILE`).
 */
@Injectable()
export class SecretConfigFields {
  private readonly catalog: ProviderCatalog;
  private readonly fields = new Map<string, ReadonlySet<string>>();

  constructor(@Inject(VAULT_ENV) env: VaultEnv) {
    this.catalog = loadCatalog(
      env.SWITCHBOARD_PROVIDERS_FILE ? { overridesFile: env.SWITCHBOARD_PROVIDERS_FILE } : {},
    );
  }

  of(provider: string): ReadonlySet<string> {
    let known = this.fields.get(provider);
    if (!known) {
      const config = this.catalog.get(provider)?.connection_config ?? {};
      known = new Set(
        Object.entries(config)
          .filter(([, field]) => field.secret === true)
          .map(([name]) => name),
      );
      this.fields.set(provider, known);
    }
    return known;
  }

  split(provider: string, config: Record<string, unknown>): SplitConfig {
    const secretNames = this.of(provider);
    const plain: Record<string, unknown> = {};
    const secret: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(config))
      (secretNames.has(name) ? secret : plain)[name] = value;
    return { plain, secret };
  }

  /**
   * The column's config as a caller without credentials may see it: secret fields left out (a row
   * written before they were sealed may still hold one in the column).
   */
  redact(provider: string, config: Record<string, unknown>): Record<string, unknown> {
    return this.split(provider, config).plain;
  }
}
