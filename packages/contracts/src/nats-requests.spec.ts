import * as contracts from './index';
import { NATS_REQUESTS, natsRequestsServedBy } from './nats-requests';
import { natsSubjectOwner } from './nats-request';
import { NATS_GRANTS, natsPermissions } from './nats-permissions';
import { SERVICE_NAMES } from './health';

/** NATS subject matching: `*` is one token, `>` one or more at the end. */
function matches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

/** Every `<context>.v<N>.…` string of the `*_SUBJECTS` objects. */
const subjects = Object.entries(contracts)
  .filter(([name, value]) => name.endsWith('_SUBJECTS') && typeof value === 'object' && value !== null)
  .flatMap(([, value]) => Object.values(value as Record<string, unknown>))
  .filter((v): v is string => typeof v === 'string' && !v.startsWith('events.'));

describe('NATS request definitions', () => {
  it('define each request subject once, keeping the subject strings', () => {
    const defined = NATS_REQUESTS.map((def) => def.subject);
    expect(new Set(defined).size).toBe(defined.length);
    // Broadcasts (every replica hears them; a lease renewal is answered by the one running the script)
    // and the records page (a raw reply with its own framing) are not request/reply to one service.
    const undefinedSubjects = subjects.filter((subject) => !defined.includes(subject));
    expect(undefinedSubjects.sort()).toEqual(
      [
        contracts.VAULT_SUBJECTS.changed,
        contracts.FUNCTIONS_API_SUBJECTS.changed,
        contracts.FUNCTIONS_SUBJECTS.cancel,
        contracts.FUNCTIONS_SUBJECTS.lease,
        contracts.OAUTH_SOCKET_SUBJECTS.all,
        contracts.RECORDS_SUBJECTS.list,
      ].sort(),
    );
    expect(defined.filter((subject) => !subjects.includes(subject))).toEqual([]);
  });

  it('give every subject an owner whose NATS user may answer it, and only that one', () => {
    for (const def of NATS_REQUESTS) {
      const owner = natsSubjectOwner(def.subject);
      expect({ subject: def.subject, owner }).toEqual({ subject: def.subject, owner: expect.any(String) });
      const answering = SERVICE_NAMES.filter((user) =>
        natsPermissions(user).subscribe.some((pattern) => matches(pattern, def.subject)),
      );
      expect({ subject: def.subject, answering }).toEqual({ subject: def.subject, answering: [owner] });
    }
  });

  it('serve, for each service, exactly the contexts it owns', () => {
    for (const service of SERVICE_NAMES) {
      const contexts = new Set(
        natsRequestsServedBy(service).map((def) => `${def.subject.split('.')[0]}.v1.>`),
      );
      expect({ service, serves: [...NATS_GRANTS[service].serves].sort() }).toEqual({
        service,
        serves: [...contexts].sort(),
      });
    }
  });
});
