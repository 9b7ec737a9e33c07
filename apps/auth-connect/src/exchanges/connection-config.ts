import type { FieldError } from '@switchboard/contracts';
import type { ResolvedProvider } from '@switchboard/providers';
import type { ConnectionConfig } from './templates';

const HOSTNAME =
  /^(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/**
 * Checks the connection config an end user typed against the provider's `connection_config` form:
 * required fields present, `pattern` and `format` respected. Fields marked `automated` are filled by
 * Switchboard itself (GitHub's `installation_id`, ...) and are not asked of the user, so not checked here.
 * Paths are `['connection_config', name]`, ready for an `invalid_body` error.
 */
export function connectionConfigProblems(
  provider: ResolvedProvider,
  connectionConfig: ConnectionConfig,
): FieldError[] {
  const problems: FieldError[] = [];
  for (const [name, field] of Object.entries(provider.connection_config ?? {})) {
    if (field.automated) continue;
    const path = ['connection_config', name];
    const value = connectionConfig[name];
    if (value === undefined || value === null || value === '') {
      if (!field.optional) problems.push({ code: 'missing', message: `${field.title} is required`, path });
      continue;
    }
    if (typeof value !== 'string') {
      problems.push({ code: 'invalid_type', message: `${field.title} must be a string`, path });
      continue;
    }
    if (field.pattern && !new RegExp(field.pattern).test(value)) {
      problems.push({
        code: 'invalid_format',
        message: `${field.title} does not match ${field.pattern}`,
        path,
      });
      continue;
    }
    const formatOk =
      field.format === undefined ||
      (field.format === 'hostname' && HOSTNAME.test(value)) ||
      (field.format === 'uuid' && UUID.test(value)) ||
      (field.format === 'email' && EMAIL.test(value)) ||
      (field.format === 'uri' && isHttpUrl(value));
    if (!formatOk)
      problems.push({
        code: 'invalid_format',
        message: `${field.title} must be a valid ${field.format}`,
        path,
      });
  }
  return problems;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}
