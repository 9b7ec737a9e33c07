import { invocationIdFor } from '../on-event/on-event.service';
import { nextVersion } from './deploy.service';

describe('nextVersion', () => {
  it('bumps the patch of a semver version, and starts at 0.0.1 otherwise', () => {
    expect(nextVersion('1.2.3')).toBe('1.2.4');
    expect(nextVersion('0.0.9')).toBe('0.0.10');
    expect(nextVersion(undefined)).toBe('0.0.1');
    expect(nextVersion('v2')).toBe('0.0.1');
  });
});

describe('invocationIdFor', () => {
  it('gives one valid UUID per (event, script): a redelivered event maps to the same runs', () => {
    const id = invocationIdFor('evt-1', 7);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(invocationIdFor('evt-1', 7)).toBe(id);
    expect(invocationIdFor('evt-1', 8)).not.toBe(id);
    expect(invocationIdFor('evt-2', 7)).not.toBe(id);
  });
});
