import type { Db, Tx } from '../../platform/db/database.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { unauthorized } from '../../platform/http/errors.js';
import { ACCESS_TOKEN_TTL_SECONDS, type AccessTokens } from '../../platform/auth/access-tokens.js';
import { clearFailures } from './lockout.js';
import { recordSecurityEvent } from './security-events.js';
import { isUnseenIp, openSession } from './sessions.js';
import type { SecondFactor } from './two-factor.js';
import { isInternalAccount, toAuthUser, type UserRow } from './users.js';

export type SignInMethod = 'password' | SecondFactor | 'idp';

/** Work other modules attach to a completed sign-in, run in its transaction (e.g. the unseen-IP notification). */
export type SignInHook = (
  tx: Tx,
  event: { user: UserRow; client: ClientInfo; at: Date; method: SignInMethod; sessionId: string; unseenIp: boolean },
) => Promise<void>;

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
}

export type TokenBundle = TokenPair & { user: ReturnType<typeof toAuthUser> };

const internalAccount = () => unauthorized("This is one of the service's own accounts; nobody can sign in to it.");

/** Hands a user who has proved who they are (password, 2FA or identity provider) a session and its tokens. */
export function createSessionStart(deps: { tokens: AccessTokens; onSignIn?: SignInHook[] }) {
  const { tokens } = deps;

  const accessTokenFor = (user: Pick<UserRow, 'id' | 'role'>, sessionId: string) =>
    tokens.sign({ sub: user.id, kind: 'access', role: user.role, sid: sessionId }, ACCESS_TOKEN_TTL_SECONDS);

  async function bundleFor(user: UserRow, session: { id: string }, refreshToken: string): Promise<TokenBundle> {
    return {
      user: toAuthUser(user),
      accessToken: await accessTokenFor(user, session.id),
      refreshToken,
      tokenType: 'Bearer',
      expiresIn: ACCESS_TOKEN_TTL_SECONDS,
    };
  }

  /** Opens a session for a user who has proved who they are (password, 2FA or identity provider). */
  async function startSession(tx: Db | Tx, user: UserRow, client: ClientInfo, now: Date): Promise<TokenBundle> {
    const { session, refreshToken } = await openSession(tx, user.id, client, now);
    return bundleFor(user, session, refreshToken);
  }

  /** Finishes a sign-in whose credentials were checked: history, lockout reset, session and the sign-in hooks. */
  async function completeSignIn(tx: Tx, user: UserRow, client: ClientInfo, now: Date, method: SignInMethod): Promise<TokenBundle> {
    if (isInternalAccount(user)) throw internalAccount();
    const unseenIp = await isUnseenIp(tx, user.id, client.ip);
    await clearFailures(tx, user.email, user.id);
    await recordSecurityEvent(tx, { userId: user.id, kind: 'LOGIN_SUCCESS', client, at: now, metadata: { method } });
    const { session, refreshToken } = await openSession(tx, user.id, client, now);
    for (const hook of deps.onSignIn ?? []) await hook(tx, { user, client, at: now, method, sessionId: session.id, unseenIp });
    return bundleFor(user, session, refreshToken);
  }

  return { accessTokenFor, startSession, completeSignIn };
}
