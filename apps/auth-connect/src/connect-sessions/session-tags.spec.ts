import { buildSessionTags, endUserView } from './session-tags';

describe('buildSessionTags', () => {
  it('derives tags from the deprecated end_user and organization, then lets top-level tags win', () => {
    expect(
      buildSessionTags(
        { id: 'u1', email: 'ada@example.com', display_name: 'Ada', tags: { Plan: 'pro' } },
        { id: 'org-1', display_name: 'Org' },
        { end_user_id: 'override', team: 'core' },
      ),
    ).toEqual({
      end_user_id: 'override',
      end_user_email: 'ada@example.com',
      end_user_display_name: 'Ada',
      organization_id: 'org-1',
      organization_display_name: 'Org',
      plan: 'pro',
      team: 'core',
    });
  });

  it('drops end_user.tags as a whole when they would pass ten tags, and skips invalid keys', () => {
    const many = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, 'v']));
    expect(buildSessionTags({ id: 'u1', email: 'a@b.co', tags: many }, undefined, undefined)).toEqual({
      end_user_id: 'u1',
      end_user_email: 'a@b.co',
    });
    expect(buildSessionTags({ id: 'u1', tags: { '9lives': 'x', ok: 'y' } }, undefined, undefined)).toEqual({
      end_user_id: 'u1',
      ok: 'y',
    });
  });

  it('gives no tags and no end user when the session has neither', () => {
    expect(buildSessionTags(undefined, undefined, undefined)).toEqual({});
    expect(endUserView(undefined, { id: 'org' })).toBeNull();
  });

  it('shows the end user in the API shape', () => {
    expect(endUserView({ id: 'u1' }, { id: 'org' })).toEqual({
      id: 'u1',
      display_name: null,
      email: null,
      tags: null,
      organization: { id: 'org', display_name: null },
    });
  });
});
