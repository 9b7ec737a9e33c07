import {
  AttributeSets,
  durationHistogram,
  meterFor,
  secondsSince,
  type Attributes,
} from '@switchboard/observability';

const meter = meterFor('@switchboard/messaging');

/**
 * NATS RED, with the semantic conventions' names: the requester side (`messaging.client.operation.duration`,
 * operation `send`) and the handler side (`messaging.process.duration`), per subject; a failed one carries
 * `error.type` (its Switchboard error code), so rate, errors and duration are one histogram each.
 * Subjects are the code's constants, so their number is bounded.
 */
const sent = durationHistogram(
  meter,
  'messaging.client.operation.duration',
  'Duration of NATS requests, from sending to the reply (requester side)',
);
const processed = durationHistogram(
  meter,
  'messaging.process.duration',
  'Duration of NATS request handling (handler side)',
);

const sets = new AttributeSets();

function attributes(
  operation: 'send' | 'process',
  subject: string,
  errorType: string | undefined,
): Attributes {
  return sets.get(`${operation}\u0000${subject}\u0000${errorType ?? ''}`, () => ({
    'messaging.system': 'nats',
    'messaging.operation.name': operation,
    'messaging.destination.name': subject,
    ...(errorType ? { 'error.type': errorType } : {}),
  }));
}

export function recordSent(subject: string, startMs: number, errorType?: string): void {
  sent.record(secondsSince(startMs), attributes('send', subject, errorType));
}

export function recordProcessed(subject: string, startMs: number, errorType?: string): void {
  processed.record(secondsSince(startMs), attributes('process', subject, errorType));
}
