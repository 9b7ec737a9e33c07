import { consoleEmailSchema, type ConsoleRole, type ConsoleUser } from '@switchboard/contracts';
import { Prisma, type AuthDb } from '@switchboard/db';
import { AuthConnectError } from '../auth-connect.errors';
import { hashPassword } from './password-hash';
import { passwordProblem } from './password-policy';

export interface NewConsoleUser {
  email: string;
  role: ConsoleRole;
  password: string;
}

type UserRow = { id: string; email: string; role: string; createdAt: Date; lastSignInAt: Date | null };

export function toConsoleUser(row: UserRow): ConsoleUser {
  return {
    id: row.id,
    email: row.email,
    role: row.role as ConsoleRole,
    created_at: row.createdAt.toISOString(),
    last_sign_in_at: row.lastSignInAt?.toISOString() ?? null,
  };
}

/**
 * Creates a console user of `accountId` after the password policy; what an admin does in the console and
 * what the first-admin command does. A second user with the same email is a conflict, whatever its account.
 */
export async function createConsoleUser(
  db: AuthDb,
  accountId: number,
  input: NewConsoleUser,
): Promise<ConsoleUser> {
  const email = consoleEmailSchema.safeParse(input.email);
  if (!email.success) {
    throw new AuthConnectError('invalid_body', 'The email address is not valid', [
      { code: 'invalid_format', message: 'Not an email address', path: ['email'] },
    ]);
  }
  const problem = passwordProblem(input.password, email.data);
  if (problem) {
    throw new AuthConnectError('invalid_body', problem, [
      { code: 'weak_password', message: problem, path: ['password'] },
    ]);
  }
  const passwordHash = await hashPassword(input.password);
  try {
    const row = await db.consoleUser.create({
      data: { accountId, email: email.data, role: input.role, passwordHash },
    });
    return toConsoleUser(row);
  } catch (error) {
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002') {
      throw new AuthConnectError('conflict', 'A console user with this email already exists');
    }
    throw error;
  }
}
