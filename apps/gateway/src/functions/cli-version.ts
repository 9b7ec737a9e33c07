import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { MIN_CLI_VERSION, SwitchboardError } from '@switchboard/contracts';
import type { FastifyRequest } from 'fastify';

const parse = (version: string): number[] => version.split('.').map((part) => Number.parseInt(part, 10) || 0);

function older(version: string, than: string): boolean {
  const a = parse(version);
  const b = parse(than);
  for (let i = 0; i < 3; i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0);
  }
  return false;
}

/**
 * The `nango` CLI says its version in its User-Agent (`nango-cli/0.71.10 (linux/…; node.js/24…)`).
 * One older than the oldest deploy payload we read is refused with the code Nango uses, which the CLI
 * prints as `<message> (invalid_cli_version)`. Other clients (our own CLI, scripts) are not checked.
 */
export function assertCliVersion(userAgent: string | undefined): void {
  const match = /^nango-cli\/(\d+\.\d+\.\d+)/.exec(userAgent ?? '');
  if (!match?.[1]) return;
  if (older(match[1], MIN_CLI_VERSION)) {
    throw new SwitchboardError(
      'invalid_cli_version',
      `nango CLI ${match[1]} is too old to deploy here; upgrade to ${MIN_CLI_VERSION} or later (npm install nango@latest)`,
    );
  }
}

/**
 * `assertCliVersion` on a route, before its inputs are parsed: an old CLI sends an old payload, and it must
 * be told to upgrade rather than that its body is invalid.
 */
@Injectable()
export class SupportedCliGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    assertCliVersion(context.switchToHttp().getRequest<FastifyRequest>().headers['user-agent']);
    return true;
  }
}
