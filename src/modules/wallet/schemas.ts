import { Type } from 'typebox';
import { DateTime, Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';

export const BalanceWithoutTotals = Type.Object({
  tokens: Type.Integer({ description: 'Token balance' }),
  credits: Type.Number({ description: 'tokens / tokensPerCredit, rounded down to 2 decimals' }),
  tokensPerCredit: Type.Integer(),
  updatedAt: DateTime,
  unpaidOverrunTokens: Type.Integer({ description: 'Tokens a generation ran over that the balance could not cover; collected from the next tokens added' }),
});

export const Balance = Type.Object({
  ...BalanceWithoutTotals.properties,
  totals: Type.Object({
    purchased: Type.Integer(),
    bonus: Type.Integer(),
    granted: Type.Integer(),
    converted: Type.Integer(),
    adjusted: Type.Integer(),
    spent: Type.Integer({ description: 'Net tokens spent on generations (usage less refunds)' }),
  }),
});

export const LedgerEntry = Type.Object({
  id: Type.String(),
  kind: Type.Enum(['GRANT', 'PURCHASE', 'PROMO', 'USAGE', 'REFUND', 'ADJUSTMENT', 'CONVERSION']),
  amount: Type.Integer({ description: 'Signed token amount' }),
  note: Nullable(Type.String()),
  paymentId: Nullable(Type.String()),
  requestId: Nullable(Type.String()),
  createdAt: DateTime,
});

export const TransactionsQuery = StrictObject(pageQuery(20, 100));
export const EmptyQuery = StrictObject({});
export const TransactionsPage = Page(LedgerEntry);
export const RecentTransactions = Type.Object({ items: Type.Array(LedgerEntry) });
