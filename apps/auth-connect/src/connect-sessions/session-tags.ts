import { CONNECT_TAG_MAX_COUNT, type ConnectEndUserInput, type EndUser } from '@switchboard/contracts';

const TAG_KEY = /^[a-z][a-z0-9_\-./]*$/;
const clip = (value: string, max: number) => (value.length > max ? value.slice(0, max) : value);

/**
 * The tags a session gives its connection, as Nango builds them: automatic tags from the deprecated
 * `end_user` / `organization` fields, then `end_user.tags` (dropped as a whole when the total would pass
 * the cap, rather than keeping an arbitrary subset), then the top-level `tags`, which win.
 */
export function buildSessionTags(
  endUser: ConnectEndUserInput | undefined,
  organization: { id: string; display_name?: string | undefined } | undefined,
  tags: Record<string, string> | undefined,
): Record<string, string> {
  const base: Record<string, string> = {};
  const set = (key: string, value: string | undefined) => {
    if (value) base[key] = clip(value, 255);
  };
  set('end_user_id', endUser?.id);
  set('end_user_email', endUser?.email);
  set('end_user_display_name', endUser?.display_name);
  set('organization_id', organization?.id);
  set('organization_display_name', organization?.display_name);

  const fromEndUser: Record<string, string> = {};
  for (const [rawKey, value] of Object.entries(endUser?.tags ?? {})) {
    const key = clip(rawKey.toLowerCase(), 64);
    if (!TAG_KEY.test(key) || value === '') continue;
    fromEndUser[key] = clip(value, 255);
  }
  let generated = { ...base, ...fromEndUser };
  if (Object.keys(generated).length > CONNECT_TAG_MAX_COUNT) generated = base;
  return { ...generated, ...(tags ?? {}) };
}

/** The end user as the API shows it (`ApiEndUser`), from what the session was given. */
export function endUserView(
  endUser: ConnectEndUserInput | undefined,
  organization: { id: string; display_name?: string | undefined } | undefined,
): EndUser | null {
  if (!endUser) return null;
  return {
    id: endUser.id,
    display_name: endUser.display_name ?? null,
    email: endUser.email ?? null,
    tags: endUser.tags ?? null,
    organization: organization
      ? { id: organization.id, display_name: organization.display_name ?? null }
      : null,
  };
}
