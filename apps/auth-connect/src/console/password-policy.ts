/** At least 12 characters (OWASP ASVS 2.1.1), at most 1024 (hashing cost), and never the email itself. */
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 1024;

/** What is wrong with a password for this email, or undefined when it passes. */
export function passwordProblem(password: string, email: string): string | undefined {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH)
    return `The password must be at least ${MIN_PASSWORD_LENGTH} characters long`;
  if (length > MAX_PASSWORD_LENGTH)
    return `The password must be at most ${MAX_PASSWORD_LENGTH} characters long`;
  const normalized = password.trim().toLowerCase();
  const address = email.trim().toLowerCase();
  const local = address.split('@')[0] ?? '';
  if (normalized === address || normalized === local) return 'The password must not be the email address';
  return undefined;
}
