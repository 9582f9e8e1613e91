import { eq, sql } from 'drizzle-orm';
import { payments } from '../../db/schema/payments.js';
import type { Db } from '../../platform/db/database.js';
import { badRequest, notFound } from '../../platform/http/errors.js';
import type { PaymentsContext } from './context.js';
import type { GatewaySimulator, SandboxAction, SimState, SimStore } from './gateways/common.js';
import type { PaymentRow } from './types.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string) => UUID.test(value);

/** The sandbox gateways keep their state with the payment (a JSON column), so any instance can serve the page. */
export function databaseSimStore(db: Db): SimStore {
  return {
    async load(paymentId) {
      if (!isUuid(paymentId)) return null;
      const [row] = await db.select({ sandbox: payments.sandbox }).from(payments).where(eq(payments.id, paymentId));
      return (row?.sandbox as SimState | null | undefined) ?? null;
    },
    async save(paymentId, state) {
      await db.update(payments).set({ sandbox: state }).where(eq(payments.id, paymentId));
    },
    async findByRef(ref) {
      const [row] = await db
        .select({ sandbox: payments.sandbox })
        .from(payments)
        .where(sql`${payments.sandbox}->>'ref' = ${ref}`);
      return (row?.sandbox as SimState | null | undefined) ?? null;
    },
  };
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const amount = (p: PaymentRow) => `${(BigInt(p.amountCents) / 100n).toString()}.${(BigInt(p.amountCents) % 100n).toString().padStart(2, '0')} ${p.currency}`;

/**
 * The sandbox checkout page: what the customer would see on the gateway, as a plain HTML form. Its buttons make the
 * simulated gateway send its real-format, signed callback to our webhook code, then go back through our return route.
 */
export function createSandboxPages(
  ctx: PaymentsContext,
  deps: { deliver(slug: string, input: import('./types.js').CallbackInput): Promise<void>; verifyPin(payment: PaymentRow, pin: string): Promise<void> },
) {
  /**
   * The payment behind a page link, while its channel still runs in sandbox here: a checkout opened in sandbox before
   * the channel went live (or before sandbox was switched off) must not be payable with the simulated gateway's button.
   */
  async function load(paymentId: string, token: string): Promise<{ payment: PaymentRow; simulator: GatewaySimulator }> {
    const missing = () => notFound('No such sandbox checkout. Open the redirectUrl that checkout returned.');
    if (!isUuid(paymentId) || !ctx.sandboxTokenValid(paymentId, token)) throw missing();
    const [payment] = await ctx.db.select().from(payments).where(eq(payments.id, paymentId));
    const simulator = payment ? ctx.channels.get(payment.channel)?.simulator : null;
    if (!payment || payment.mode !== 'sandbox' || !simulator) throw missing();
    return { payment, simulator };
  }

  return {
    async page(paymentId: string, token: string): Promise<string> {
      const { payment, simulator } = await load(paymentId, token);
      const state = payment.sandbox as SimState | null;
      const notes = state && simulator.pageNotes ? simulator.pageNotes(state) : [];
      const open = payment.status === 'PENDING' && state?.status === 'open' && !state.approved;
      const pinField = state?.pin
        ? '<p><label>PIN from the text message <input name="pin" inputmode="numeric" pattern="[0-9]{5}" maxlength="5" autocomplete="one-time-code"></label></p>'
        : '';
      const body = open
        ? `<form method="post" action="/v1/payments/sandbox/${payment.id}">
  <input type="hidden" name="t" value="${escapeHtml(token)}">
  ${pinField}
  <button type="submit" name="action" value="pay" id="pay">Pay</button>
  <button type="submit" name="action" value="cancel" id="cancel">Cancel</button>
  <button type="submit" name="action" value="fail" id="fail">Fail</button>
</form>`
        : `<p id="status">This checkout is ${escapeHtml(payment.status.toLowerCase())}${state?.approved ? ' (approved, waiting for capture)' : ''}; nothing more can be done here.</p>`;
      return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sandbox checkout: ${escapeHtml(payment.channel)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}main{border:1px solid #ccc;border-radius:8px;padding:1.5rem}
.sandbox{background:#fff3cd;padding:.5rem;border-radius:4px}button{font-size:1rem;margin-right:.5rem;padding:.5rem 1rem}.note{background:#e7f1ff;padding:.5rem;border-radius:4px}</style>
</head>
<body>
<main>
<p class="sandbox">Sandbox: no real money moves. This page stands in for the ${escapeHtml(payment.channel)} gateway.</p>
<h1>Pay ${escapeHtml(amount(payment))}</h1>
<p>${escapeHtml(payment.description)}</p>
${notes.map((note) => `<p class="note">${escapeHtml(note)}</p>`).join('\n')}
${body}
</main>
</body>
</html>`;
    },

    /** A button: the simulated gateway moves the checkout and calls our webhook; returns where the browser goes next. */
    async press(paymentId: string, token: string, action: SandboxAction, pin?: string): Promise<string> {
      const { payment, simulator } = await load(paymentId, token);
      const state = payment.sandbox as SimState | null;
      if (action === 'pay' && state?.pin) {
        if (!pin) throw badRequest('Enter the PIN shown on this page.', { field: 'pin', retryable: true });
        await deps.verifyPin(payment, pin);
        return ctx.returnUrl(payment.id, 'success');
      }
      const callback = await simulator.press(payment.id, action);
      if (callback) await deps.deliver(payment.channel, callback);
      return ctx.returnUrl(payment.id, action === 'pay' ? 'success' : action);
    },
  };
}
