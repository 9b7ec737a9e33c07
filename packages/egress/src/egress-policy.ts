import { BlockList, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type EgressVerdict = { allowed: true } | { allowed: false; reason: string };

/** Names that point at the machine or the cloud's metadata service whatever DNS says. */
const DENIED_NAMES = new Set([
  'localhost',
  'metadata.google.internal',
  'metadata',
  'instance-data',
  'metadata.azure.internal',
]);

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** At least two DNS labels (letters, digits, hyphens, underscores), the last one not all digits. */
const FQDN =
  /^(?=.{1,253}$)(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)+(?=[a-z0-9-]*[a-z-])[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Which destinations a service may open a connection to (the proxy towards providers, the webhook
 * relay towards customer URLs). Only public unicast addresses pass by default: loopback, private
 * (RFC 1918, ULA), carrier-grade NAT, link-local (cloud metadata), multicast, reserved and unspecified
 * ranges are refused, IPv6 forms that embed an IPv4 address (IPv4-mapped, NAT64, 6to4) are judged
 * by that embedded address, and the deprecated IPv4-compatible form (::/96) is refused whatever it holds. `SWITCHBOARD_EGRESS_ALLOW` opens named exceptions: exact, fully qualified
 * host names (then every address they resolve to is accepted) or IPs/CIDRs.
 */
export class EgressPolicy {
  private readonly hosts = new Set<string>();
  private readonly ranges: [Address, number][] = [];

  /**
   * The policy of one kind of traffic: its own list (`SWITCHBOARD_PROXY_EGRESS_ALLOW`,
   * `SWITCHBOARD_TOKEN_EGRESS_ALLOW`, `SWITCHBOARD_WEBHOOK_EGRESS_ALLOW`) when that variable is set, even
   * to nothing, else the shared `SWITCHBOARD_EGRESS_ALLOW` (what every user read before the lists were
   * split, so an unchanged configuration behaves as before). Separate lists let a receiver inside the
   * network be reachable by webhook deliveries without the proxy (which any `environment:proxy` key
   * aims with Base-Url-Override) reaching it too.
   */
  static forTraffic(variable: string, own: string | undefined, shared: string): EgressPolicy {
    return own === undefined
      ? new EgressPolicy(shared, 'SWITCHBOARD_EGRESS_ALLOW')
      : new EgressPolicy(own, variable);
  }

  /**
   * `allow`: the raw comma list, or its entries already split. A malformed entry throws (fails the boot),
   * naming `variable`.
   */
  constructor(
    allow: string | readonly string[] = '',
    private readonly variable = 'SWITCHBOARD_EGRESS_ALLOW',
  ) {
    const entries = typeof allow === 'string' ? allow.split(',') : allow;
    for (const raw of entries.map((s) => s.trim()).filter(Boolean)) {
      const entry = raw.replace(/^\[|\]$/g, '');
      if (entry.includes('/')) {
        try {
          this.ranges.push(ipaddr.parseCIDR(entry));
        } catch {
          throw new Error(
            `${variable}: "${raw}" is not a valid CIDR (address or prefix length out of range)`,
          );
        }
      } else if (isIP(entry)) {
        const address = ipaddr.parse(entry);
        this.ranges.push([address, address.kind() === 'ipv4' ? 32 : 128]);
      } else if (FQDN.test(normaliseHost(entry))) {
        this.hosts.add(normaliseHost(entry));
      } else {
        // A single-label name would mean whatever the machine's DNS search domains make of it, and
        // anything else here is most likely a mistyped CIDR: refuse both rather than open the wrong thing.
        throw new Error(`${variable}: "${raw}" is not a CIDR, an IP address or a fully qualified host name`);
      }
    }
  }

  /**
   * Why this URL may not be used as a destination, or undefined. Judges what the URL alone tells:
   * scheme, embedded credentials, denied names and IP literals (WHATWG URL has already turned 0x7f.1,
   * 2130706433 and the like into dotted quads). A host name's addresses are judged when it is resolved,
   * by the connector (see `egressConnector`).
   */
  urlProblem(value: string): string | undefined {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return 'is not a valid URL';
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use http or https';
    if (url.username || url.password) return 'must not contain credentials';
    const verdict = this.checkHost(url.hostname);
    return verdict.allowed ? undefined : `points to a blocked destination (${verdict.reason})`;
  }

  /** True when the host name itself is an exception: its addresses are then not checked. */
  hostAllowed(hostname: string): boolean {
    return this.hosts.has(normaliseHost(hostname));
  }

  /** Checks a URL's host before any lookup: denied names, and IP literals (which need no lookup). */
  checkHost(hostname: string): EgressVerdict {
    const host = normaliseHost(hostname);
    if (this.hosts.has(host)) return { allowed: true };
    if (isIP(host)) return this.checkAddress(host);
    if (DENIED_NAMES.has(host) || host.endsWith('.localhost'))
      return { allowed: false, reason: `host "${host}" is not allowed` };
    return { allowed: true };
  }

  /** Checks one resolved (or literal) address. */
  checkAddress(ip: string): EgressVerdict {
    let address: Address;
    try {
      address = ipaddr.parse(ip.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
    } catch {
      return { allowed: false, reason: `"${ip}" is not an IP address` };
    }
    const literal = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
    // Before the exceptions: an allowed IPv4 range does not open its IPv4-compatible spelling.
    if (
      isIP(literal) === 6 &&
      IPV4_COMPATIBLE_RANGE.check(literal, 'ipv6') &&
      !['::', '::1'].includes(address.toString()) &&
      !this.ranges.some(([range, bits]) => range.kind() === 'ipv6' && address.match([range, bits] as never))
    )
      return { allowed: false, reason: `address ${literal} is ${IPV4_COMPATIBLE.label}` };
    if (this.inAllowedRange(address)) return { allowed: true };
    const problem = unsafeRange(address);
    if (problem && !(problem.embedded && this.inAllowedRange(problem.embedded))) {
      return { allowed: false, reason: `address ${address.toString()} is ${problem.label}` };
    }
    return { allowed: true };
  }

  private inAllowedRange(address: Address): boolean {
    return this.ranges.some(([range, bits]) => {
      if (range.kind() !== address.kind()) {
        // An allowed IPv4 range also covers the same addresses written as IPv4-mapped IPv6.
        if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
          return (
            range.kind() === 'ipv4' &&
            (address as ipaddr.IPv6).toIPv4Address().match(range as ipaddr.IPv4, bits)
          );
        }
        return false;
      }
      return address.match([range, bits] as never);
    });
  }
}

function normaliseHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.+$/, '');
}

/**
 * IPv4-compatible IPv6 (::a.b.c.d, ::/96, deprecated by RFC 4291): some stacks still route it to the IPv4
 * address, so `::127.0.0.1` or `::10.0.0.1` could reach what the IPv4 check refuses. No public destination
 * uses it, so the whole range is refused. ipaddr.js calls `::a00:1` plain unicast and reads the dotted
 * `::10.0.0.1` as IPv4-mapped, so the range is checked on the literal with Node's own parser as well.
 */
const IPV4_COMPATIBLE = { label: 'IPv4-compatible IPv6 (::/96)' };
const IPV4_COMPATIBLE_RANGE = new BlockList();
IPV4_COMPATIBLE_RANGE.addSubnet('::', 96, 'ipv6');

/** Why an address may not be reached (undefined when it is public unicast). */
function unsafeRange(address: Address): { label: string; embedded?: Address } | undefined {
  if (address.kind() === 'ipv4') {
    const range = address.range();
    return range === 'unicast' ? undefined : { label: range };
  }
  const v6 = address as ipaddr.IPv6;
  const embedded = embeddedIPv4(v6);
  if (embedded) {
    const inner = unsafeRange(embedded);
    return inner ? { label: `${v6.range()} of ${inner.label} ${embedded.toString()}`, embedded } : undefined;
  }
  const range = v6.range();
  if (range === 'rfc6052') return { label: 'local-use NAT64' };
  if (range === 'unicast' && v6.parts.slice(0, 6).every((part) => part === 0)) return IPV4_COMPATIBLE;
  return range === 'unicast' ? undefined : { label: range };
}

/** The IPv4 address carried inside an IPv4-mapped, NAT64 (RFC 6052 / 8215) or 6to4 IPv6 address. */
function embeddedIPv4(v6: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const parts = v6.parts;
  const fromWords = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  switch (v6.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return fromWords(parts[6] ?? 0, parts[7] ?? 0);
    case 'rfc6052':
      // Only the well-known 64:ff9b::/96 puts the IPv4 address in the last 32 bits; the local-use
      // 64:ff9b:1::/48 may use other layouts and is refused as a whole (see unsafeRange).
      return parts.slice(2, 6).every((p) => p === 0) ? fromWords(parts[6] ?? 0, parts[7] ?? 0) : undefined;
    case '6to4':
      return fromWords(parts[1] ?? 0, parts[2] ?? 0);
    default:
      return undefined;
  }
}
