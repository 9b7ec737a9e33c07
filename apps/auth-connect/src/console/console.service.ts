import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import {
  consoleEmailSchema,
  type ConsoleActor,
  type ConsoleAuditAction,
  type ConsoleAuditPage,
  type ConsoleAuditQuery,
  type ConsoleAuditRequest,
  type ConsoleRole,
  type ConsoleUser,
  type CreateConsoleUserBody,
  type VerifiedConsoleSession,
} from '@switchboard/contracts';
import type { AuthDb } from '@switchboard/db';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';
import { AUTH_DB } from '../database/database.module';
import { createConsoleUser, toConsoleUser } from './console-users';
import { hashPassword, verifyPassword } from './password-hash';

/** `last_seen_at` is written at most this often per session, so reads do not each cost a write. */
const TOUCH_EVERY_MS = 60_000;

const sessionRequired = () =>
  new AuthConnectError('console_session_required', 'Sign in to the console first');
const invalidCredentials = () =>
  new AuthConnectError('invalid_credentials', 'The email or the password is wrong');

/** An audit row of the account's own (no environment). */
function accountEvent(
  user: { id: string; email: string; accountId: number },
  action: ConsoleAuditAction,
  target: Record<string, string>,
) {
  return {
    accountId: user.accountId,
    environmentId: null,
    userId: user.id,
    userEmail: user.email,
    action,
    target,
  };
}

/**
 * Console sign-in, the sessions it opens and the account's console users. A session is looked up by the
 * SHA-256 of its cookie value; it ends after SWITCHBOARD_CONSOLE_IDLE_TIMEOUT_S without use, at
 * SWITCHBOARD_CONSOLE_SESSION_MAX_AGE_S after sign-in whatever happens, at sign-out, and when its user's
 * role changes or the user is deleted.
 */
@Injectable()
export class ConsoleService {
  private readonly idleMs: number;
  private readonly maxAgeMs: number;
  /** Verified against when the email is unknown, so both answers take about as long. */
  private decoy: Promise<string> | undefined;

  constructor(
    @Inject(AUTH_DB) private readonly db: AuthDb,
    @Inject(AUTH_CONNECT_ENV) env: AuthConnectEnv,
  ) {
    this.idleMs = env.SWITCHBOARD_CONSOLE_IDLE_TIMEOUT_S * 1000;
    this.maxAgeMs = env.SWITCHBOARD_CONSOLE_SESSION_MAX_AGE_S * 1000;
  }

  async signIn(email: string, password: string, tokenHash: string): Promise<VerifiedConsoleSession> {
    const parsed = consoleEmailSchema.safeParse(email);
    const user = parsed.success
      ? await this.db.consoleUser.findUnique({ where: { email: parsed.data } })
      : null;
    if (!user) {
      this.decoy ??= hashPassword(randomBytes(16).toString('hex'));
      await verifyPassword(password, await this.decoy);
      throw invalidCredentials();
    }
    if (!(await verifyPassword(password, user.passwordHash))) throw invalidCredentials();
    return this.openSession(user, tokenHash, 'password');
  }

  /** Signs in the console user with this email, whom an identity provider vouched for (OIDC). */
  async signInVouched(email: string, tokenHash: string): Promise<VerifiedConsoleSession> {
    const parsed = consoleEmailSchema.safeParse(email);
    const user = parsed.success
      ? await this.db.consoleUser.findUnique({ where: { email: parsed.data } })
      : null;
    if (!user) {
      throw new AuthConnectError('invalid_credentials', 'No console user has the email the provider gave');
    }
    return this.openSession(user, tokenHash, 'oidc');
  }

  private async openSession(
    user: { id: string; email: string; role: string; accountId: number },
    tokenHash: string,
    method: 'password' | 'oidc',
  ): Promise<VerifiedConsoleSession> {
    const now = new Date();
    const session = await this.db.$transaction(async (tx) => {
      // Ended sessions go as a new one starts, so the table does not grow without bound: everybody's past
      // their absolute end (indexed), and this user's idle ones.
      await tx.consoleSession.deleteMany({
        where: {
          OR: [
            { expiresAt: { lte: now } },
            { userId: user.id, lastSeenAt: { lte: new Date(now.getTime() - this.idleMs) } },
          ],
        },
      });
      await tx.consoleUser.update({ where: { id: user.id }, data: { lastSignInAt: now } });
      await tx.consoleAuditEvent.create({
        data: accountEvent(user, 'console.sign_in', { method }),
      });
      return tx.consoleSession.create({
        data: { userId: user.id, tokenHash, expiresAt: new Date(now.getTime() + this.maxAgeMs) },
      });
    });
    return this.describe(session.id, session.expiresAt, user);
  }

  async verify(tokenHash: string): Promise<VerifiedConsoleSession> {
    const session = await this.db.consoleSession.findUnique({
      where: { tokenHash },
      include: { user: true },
    });
    if (!session) throw sessionRequired();
    const now = Date.now();
    if (session.expiresAt.getTime() <= now || session.lastSeenAt.getTime() + this.idleMs <= now) {
      await this.db.consoleSession.deleteMany({ where: { id: session.id } });
      throw sessionRequired();
    }
    if (now - session.lastSeenAt.getTime() >= TOUCH_EVERY_MS) {
      await this.db.consoleSession.updateMany({
        where: { id: session.id },
        data: { lastSeenAt: new Date(now) },
      });
    }
    return this.describe(session.id, session.expiresAt, session.user);
  }

  async signOut(tokenHash: string): Promise<{ success: true }> {
    await this.db.consoleSession.deleteMany({ where: { tokenHash } });
    return { success: true };
  }

  async listUsers(actor: ConsoleActor): Promise<{ users: ConsoleUser[] }> {
    await this.requireAdmin(actor);
    const rows = await this.db.consoleUser.findMany({
      where: { accountId: actor.accountId },
      orderBy: { createdAt: 'asc' },
    });
    return { users: rows.map(toConsoleUser) };
  }

  async createUser(actor: ConsoleActor, body: CreateConsoleUserBody): Promise<ConsoleUser> {
    await this.requireAdmin(actor);
    // Not one transaction: the password's hashing would hold it open.
    const created = await createConsoleUser(this.db, actor.accountId, body);
    await this.recordBy(this.db, actor, 'console.user_created', {
      user_id: created.id,
      email: created.email,
      role: created.role,
    });
    return created;
  }

  /** A new role takes effect at once: the user's sessions end and they sign in again. */
  async updateUser(actor: ConsoleActor, id: string, role: ConsoleRole): Promise<ConsoleUser> {
    return this.db.$transaction(async (tx) => {
      await this.requireAdmin(actor, tx);
      const user = await this.lockedUser(tx, actor.accountId, id);
      if (user.role === role) return toConsoleUser(user);
      if (user.role === 'admin') await this.keepAnAdmin(tx, actor.accountId, id);
      const updated = await tx.consoleUser.update({ where: { id }, data: { role } });
      await tx.consoleSession.deleteMany({ where: { userId: id } });
      await this.recordBy(tx, actor, 'console.role_changed', {
        user_id: id,
        email: user.email,
        from: user.role,
        to: role,
      });
      return toConsoleUser(updated);
    });
  }

  /** The user's sessions go with it (cascade); audit events keep its email. */
  async deleteUser(actor: ConsoleActor, id: string): Promise<ConsoleUser> {
    return this.db.$transaction(async (tx) => {
      await this.requireAdmin(actor, tx);
      const user = await this.lockedUser(tx, actor.accountId, id);
      if (user.role === 'admin') await this.keepAnAdmin(tx, actor.accountId, id);
      await tx.consoleUser.delete({ where: { id } });
      await this.recordBy(tx, actor, 'console.user_deleted', { user_id: id, email: user.email });
      return toConsoleUser(user);
    });
  }

  async audit(request: ConsoleAuditRequest): Promise<{ success: true }> {
    const user = await this.db.consoleUser.findFirst({
      where: { id: request.userId, accountId: request.accountId },
      select: { email: true },
    });
    if (!user) throw sessionRequired();
    await this.db.consoleAuditEvent.create({
      data: {
        accountId: request.accountId,
        environmentId: request.environmentId,
        userId: request.userId,
        userEmail: user.email,
        action: request.action,
        target: request.target,
      },
    });
    return { success: true };
  }

  /** The account's audit log, newest first; an admin's read (the role re-read, as for users). */
  async listAudit(actor: ConsoleActor, query: ConsoleAuditQuery): Promise<ConsoleAuditPage> {
    await this.requireAdmin(actor);
    const rows = await this.db.consoleAuditEvent.findMany({
      where: {
        accountId: actor.accountId,
        ...(query.action ? { action: query.action } : {}),
        ...(query.cursor ? { id: { lt: Number(query.cursor) } } : {}),
      },
      orderBy: { id: 'desc' },
      take: query.limit + 1,
    });
    const page = rows.slice(0, query.limit);
    const environmentIds = [
      ...new Set(page.flatMap((r) => (r.environmentId === null ? [] : [r.environmentId]))),
    ];
    const environments = new Map(
      (
        await this.db.environment.findMany({
          where: { id: { in: environmentIds }, accountId: actor.accountId },
          select: { id: true, name: true },
        })
      ).map((e) => [e.id, e.name]),
    );
    return {
      data: page.map((row) => ({
        id: row.id,
        action: row.action as ConsoleAuditAction,
        user_id: row.userId,
        user_email: row.userEmail,
        environment: row.environmentId === null ? null : (environments.get(row.environmentId) ?? null),
        target: row.target as Record<string, string>,
        created_at: row.createdAt.toISOString(),
      })),
      next_cursor: rows.length > query.limit ? String(page[page.length - 1]!.id) : null,
    };
  }

  /** An account event done by an admin (whose email is read in the same transaction). */
  private async recordBy(
    tx: Pick<AuthDb, 'consoleUser' | 'consoleAuditEvent'>,
    actor: ConsoleActor,
    action: ConsoleAuditAction,
    target: Record<string, string>,
  ): Promise<void> {
    const admin = await tx.consoleUser.findFirstOrThrow({
      where: { id: actor.userId, accountId: actor.accountId },
      select: { email: true },
    });
    await tx.consoleAuditEvent.create({
      data: accountEvent(
        { id: actor.userId, email: admin.email, accountId: actor.accountId },
        action,
        target,
      ),
    });
  }

  private async describe(
    sessionId: number,
    expiresAt: Date,
    user: { id: string; email: string; role: string; accountId: number },
  ): Promise<VerifiedConsoleSession> {
    const environments = await this.db.environment.findMany({
      where: { accountId: user.accountId },
      select: { id: true, uuid: true, name: true },
      orderBy: { id: 'asc' },
    });
    return {
      sessionId,
      accountId: user.accountId,
      user: { id: user.id, email: user.email, role: user.role as ConsoleRole },
      environments,
      expiresAt: expiresAt.getTime(),
    };
  }

  /** The gateway checked the role already; this re-reads it, so a demotion a moment ago counts. */
  private async requireAdmin(actor: ConsoleActor, db: Pick<AuthDb, 'consoleUser'> = this.db): Promise<void> {
    const row = await db.consoleUser.findFirst({
      where: { id: actor.userId, accountId: actor.accountId },
      select: { role: true },
    });
    if (row?.role !== 'admin') throw new AuthConnectError('forbidden', 'Only an admin manages console users');
  }

  private async lockedUser(tx: Pick<AuthDb, '$queryRaw' | 'consoleUser'>, accountId: number, id: string) {
    // Admin changes of one account run one at a time, so two cannot each leave the other as the last admin.
    await tx.$queryRaw`SELECT id FROM auth.accounts WHERE id = ${accountId} FOR UPDATE`;
    const user = await tx.consoleUser.findFirst({ where: { id, accountId } });
    if (!user) throw new AuthConnectError('not_found', `No console user ${id}`);
    return user;
  }

  private async keepAnAdmin(tx: Pick<AuthDb, 'consoleUser'>, accountId: number, id: string): Promise<void> {
    const others = await tx.consoleUser.count({ where: { accountId, role: 'admin', id: { not: id } } });
    if (others === 0) {
      throw new AuthConnectError(
        'conflict',
        "This is the account's last admin; make another user admin first",
      );
    }
  }
}
