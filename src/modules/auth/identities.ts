import { and, eq } from 'drizzle-orm';
import { userIdentities, users } from '../../db/schema/auth.js';
import type { Tx } from '../../platform/db/database.js';
import { hashPassword } from './passwords.js';
import { randomToken } from '../../platform/crypto/secrets.js';
import type { VerifiedIdentity } from './idp.js';
import { assertAssignableEmail, findActiveUserByEmail, findActiveUserById, insertUser, type UserRow } from './users.js';

/**
 * The account an identity-provider sign-in opens: the one already linked to this provider account, else the one
 * with the verified email (linked now; never one of the service's own accounts), else a new account with an
 * unguessable random password.
 * The email is marked verified, since the provider verified it.
 */
export async function findOrCreateIdentityUser(
  tx: Tx,
  identity: VerifiedIdentity,
  now: Date,
  onCreated: (tx: Tx, user: UserRow) => Promise<void>,
): Promise<{ user: UserRow; created: boolean }> {
  // Also refused by the provider check (idp.ts): an identity at a reserved address opens no account, not even a linked one.
  assertAssignableEmail(identity.email);
  const [link] = await tx
    .select()
    .from(userIdentities)
    .where(and(eq(userIdentities.issuer, identity.issuer), eq(userIdentities.subject, identity.subject)));
  let user = link ? await findActiveUserById(tx, link.userId) : undefined;
  let created = false;
  user ??= await findActiveUserByEmail(tx, identity.email);
  if (!user) {
    user = await insertUser(tx, {
      email: identity.email,
      passwordHash: await hashPassword(randomToken()),
      name: identity.name,
      emailVerified: true,
      createdAt: now,
    });
    await onCreated(tx, user);
    created = true;
  } else if (!user.emailVerified && user.email === identity.email) {
    [user] = (await tx.update(users).set({ emailVerified: true, updatedAt: now }).where(eq(users.id, user.id)).returning()) as [UserRow];
  }
  await tx
    .insert(userIdentities)
    .values({ userId: user.id, issuer: identity.issuer, subject: identity.subject, email: identity.email, createdAt: now, lastUsedAt: now })
    .onConflictDoUpdate({
      target: [userIdentities.issuer, userIdentities.subject],
      set: { userId: user.id, email: identity.email, lastUsedAt: now },
    });
  return { user, created };
}
