import { AttributeSets, meterFor } from '@switchboard/observability';

const meter = meterFor('@switchboard/gateway');

/**
 * `switchboard.ratelimit.rejections`: requests answered 429, by the class of window that refused them
 * (`account`, `session`, `ip`, `webhook-ip`, `webhook-env`: the limiter key's prefix, never the key).
 */
const rejections = meter.createCounter('switchboard.ratelimit.rejections', {
  description: 'Requests refused by the gateway rate limiter (429), by window kind',
});
const kinds = new AttributeSets(32);

export function recordRateLimitRejection(key: string): void {
  const colon = key.indexOf(':');
  const kind = colon === -1 ? 'other' : key.slice(0, colon);
  rejections.add(
    1,
    kinds.get(kind, () => ({ 'switchboard.ratelimit.kind': kind })),
  );
}
