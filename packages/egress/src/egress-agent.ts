import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';
import type { EgressPolicy } from './egress-policy';

/**
 * The connector's refusal. Callers recognise it by `code` as well as by class, because undici may
 * rewrap connector errors (and the proxy's redirect follower throws its own error with the same code).
 */
export class EgressRefusedError extends Error {
  readonly code = 'SWITCHBOARD_EGRESS_REFUSED';
  constructor(readonly reason: string) {
    super(`egress refused: ${reason}`);
  }
}

export interface ResolvedAddress {
  address: string;
  family: number;
}
/** Host name → every address it resolves to. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

export interface EgressAgentOptions {
  policy: EgressPolicy;
  connectTimeoutMs: number;
  /** Replaced in tests by a stub that answers dangerous addresses. */
  resolver?: Resolver;
  /** The socket opener; tests wrap it to fail on any connect attempt that would leave loopback. */
  connect?: buildConnector.connector;
}

/**
 * The connector every provider connection goes through. It resolves the host itself, refuses the
 * connection when any answer is outside the policy, then connects to the checked address (the address
 * is pinned: nothing resolves the name a second time). TLS still verifies the certificate against the
 * host name, which travels as the SNI server name. IP literals are checked without a lookup.
 */
export function egressConnector(options: EgressAgentOptions): buildConnector.connector {
  const { policy } = options;
  const resolver = options.resolver ?? systemResolver;
  const connect = options.connect ?? buildConnector({ timeout: options.connectTimeoutMs });

  return (opts, callback) => {
    const hostname = opts.hostname.replace(/^\[|\]$/g, '');
    if (isIP(hostname)) {
      const verdict = policy.checkAddress(hostname);
      if (!verdict.allowed) return callback(new EgressRefusedError(verdict.reason), null);
      return connect(opts, callback);
    }
    const hostVerdict = policy.checkHost(hostname);
    if (!hostVerdict.allowed) return callback(new EgressRefusedError(hostVerdict.reason), null);

    resolver(hostname).then(
      (addresses) => {
        if (addresses.length === 0)
          return callback(
            Object.assign(new Error(`${hostname} did not resolve`), { code: 'ENOTFOUND' }),
            null,
          );
        if (!policy.hostAllowed(hostname)) {
          for (const { address } of addresses) {
            const verdict = policy.checkAddress(address);
            if (!verdict.allowed)
              return callback(
                new EgressRefusedError(`${hostname} resolves to a refused address (${verdict.reason})`),
                null,
              );
          }
        }
        const pinned = addresses[0]!.address;
        return connect(
          {
            ...opts,
            hostname: pinned,
            servername: opts.servername ?? (opts.protocol === 'https:' ? hostname : undefined),
          },
          callback,
        );
      },
      (error: unknown) => callback(error as Error, null),
    );
  };
}

export function createEgressAgent(
  options: EgressAgentOptions & { keepAliveTimeoutMs?: number; connections?: number },
): Agent {
  return new Agent({
    connect: egressConnector(options),
    keepAliveTimeout: options.keepAliveTimeoutMs ?? 10_000,
    ...(options.connections === undefined ? {} : { connections: options.connections }),
  });
}
