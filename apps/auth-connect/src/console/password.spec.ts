import { defaultAlgorithm, hashPassword, verifyPassword } from './password-hash';
import { passwordProblem } from './password-policy';

describe('console password hashing', () => {
  it('uses argon2id on this Node (24.x has crypto.argon2)', () => {
    expect(process.versions.node.split('.')[0]).toBe('24');
    expect(defaultAlgorithm()).toBe('argon2id');
  });

  it('hashes into an argon2id PHC string with the OWASP parameters and a fresh salt', async () => {
    const first = await hashPassword('correct horse battery staple');
    const second = await hashPassword('correct horse battery staple');
    expect(first).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    expect(second).not.toBe(first);
    expect(first).not.toContain('correct horse');
  });

  it('verifies the right password and refuses a wrong one', async () => {
    const stored = await hashPassword('correct horse battery staple');
    await expect(verifyPassword('correct horse battery staple', stored)).resolves.toBe(true);
    await expect(verifyPassword('correct horse battery stapl', stored)).resolves.toBe(false);
    await expect(verifyPassword('', stored)).resolves.toBe(false);
  });

  it('verifies scrypt hashes (the fallback) as well', async () => {
    const stored = await hashPassword('another long password', 'scrypt');
    expect(stored).toMatch(/^\$scrypt\$ln=17,r=8,p=1\$/);
    await expect(verifyPassword('another long password', stored)).resolves.toBe(true);
    await expect(verifyPassword('another long passwore', stored)).resolves.toBe(false);
  });

  it('answers false for a malformed or unknown hash', async () => {
    await expect(verifyPassword('whatever', 'not-a-hash')).resolves.toBe(false);
    await expect(verifyPassword('whatever', '$2b$10$abcdefghijklmnopqrstuv')).resolves.toBe(false);
  });
});

describe('console password policy', () => {
  it('refuses fewer than 12 characters, counting characters rather than bytes', () => {
    expect(passwordProblem('short pass1', 'a@example.com')).toMatch(/at least 12/);
    expect(passwordProblem('twelve chars', 'a@example.com')).toBeUndefined();
    expect(passwordProblem('ééééééééééé', 'a@example.com')).toMatch(/at least 12/);
  });

  it('refuses the email address (or its local part), whatever the case', () => {
    expect(passwordProblem('Alice.Smith@Example.com', 'alice.smith@example.com')).toMatch(/email/);
    expect(passwordProblem('alice.smith.long', 'alice.smith.long@example.com')).toMatch(/email/);
    expect(passwordProblem('alice.smith@example.com!', 'alice.smith@example.com')).toBeUndefined();
  });

  it('refuses more than 1024 characters', () => {
    expect(passwordProblem('x'.repeat(1025), 'a@example.com')).toMatch(/at most 1024/);
  });
});
