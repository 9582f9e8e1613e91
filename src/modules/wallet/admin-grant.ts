import { eq } from 'drizzle-orm';
import { walletLedger } from '../../db/schema/wallet.js';
import type { Db } from '../../platform/db/database.js';
import { conflict } from '../../platform/http/errors.js';
import type { AuditWriter } from '../audit/service.js';
import { creditWithDebtCollection, ensureWallet } from './ledger.js';

export interface SupportGrant {
  userId: string;
  tokens: number;
  reason: string;
  /** The operator's key (or one the caller generated): the same key never grants twice. */
  idempotencyKey: string;
}

export interface SupportGrantResult {
  /** false: a grant with this key was already made; nothing changed. */
  applied: boolean;
  ledgerEntryId: string;
  tokens: number;
  balance: number;
}

/**
 * A support grant: one `GRANT` ledger row with the reason as its note, keyed `admin-grant:<key>` so a retried grant
 * (same key) returns the first one and moves nothing; the same key for another user or amount is a 409. The audit
 * row commits with the grant.
 */
export async function grantBySupport(db: Db, grant: SupportGrant, now: Date, audit: AuditWriter): Promise<SupportGrantResult> {
  const key = `admin-grant:${grant.idempotencyKey}`;
  return db.transaction(async (tx) => {
    const wallet = await ensureWallet(tx, { userId: grant.userId }, now);
    const result = await creditWithDebtCollection(tx, wallet.id, { kind: 'GRANT', amount: grant.tokens, idempotencyKey: key, note: grant.reason }, now);
    const [row] = await tx.select().from(walletLedger).where(eq(walletLedger.idempotencyKey, key));
    if (!result.applied) {
      if (row!.walletId !== wallet.id || row!.amount !== grant.tokens) {
        throw conflict('This idempotency key was already used for a different grant. Use a new key for a new grant.', { idempotencyKey: grant.idempotencyKey });
      }
      return { applied: false, ledgerEntryId: row!.id, tokens: row!.amount, balance: result.balance };
    }
    await audit(
      {
        action: 'wallet.grant',
        targetType: 'user',
        targetId: grant.userId,
        before: { balance: wallet.balance },
        after: { balance: result.balance, tokens: grant.tokens, ledgerEntryId: row!.id, idempotencyKey: grant.idempotencyKey },
        reason: grant.reason,
      },
      tx,
    );
    return { applied: true, ledgerEntryId: row!.id, tokens: grant.tokens, balance: result.balance };
  });
}
