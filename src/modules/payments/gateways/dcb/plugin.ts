import { badRequest } from '../../../../platform/http/errors.js';
import type { ChannelPlugin, ChannelValues } from '../plugin.js';
import { createDcb, simulateDcb } from './gateway.js';
import { settings } from './settings.js';

const typed = (baseUrl: string, v: ChannelValues) => ({ baseUrl, apiKey: v.API_KEY! });
const MSISDN = /^\d{10,15}$/;

export const dcb: ChannelPlugin<typeof settings> = {
  settings,
  seed: {
    name: 'Mobile balance (carrier billing)',
    sortOrder: 60,
    carriers: [
      { value: 'GP', label: 'Grameenphone', needsPin: true },
      { value: 'BL', label: 'Banglalink', needsPin: false },
      { value: 'ROBI', label: 'Robi', needsPin: true },
      { value: 'ROBI_WAP', label: 'Robi (web)', needsPin: false },
      { value: 'BKASH', label: 'bKash balance', needsPin: true },
    ],
    // The carrier aggregator has plans registered for these amounts only (the Starter and Pro prices).
    amountsCents: [49_900, 149_900],
  },
  traits: {
    autoRenews: true,
    supportsRecurring: true,
    recurringDefault: true,
    currencies: ['BDT'],
    fields: [
      { name: 'paymentProvider', label: 'Mobile operator', type: 'select' },
      { name: 'msisdn', label: 'Mobile number (local format, no country code)', type: 'tel' },
    ],
  },
  sandboxValues: (secret) => ({ API_KEY: secret('api-key') }),
  adapter: (baseUrl, v, deps) => createDcb(typed(baseUrl, v), deps),
  simulator: (baseUrl, v, ctx) => simulateDcb(typed(baseUrl, v), ctx),

  validateExtra(row, extra) {
    if (!row.carriers.some((c) => c.value === extra.paymentProvider)) {
      throw badRequest(`extra.paymentProvider: "${extra.paymentProvider}" is not offered; choose one of ${row.carriers.map((c) => c.value).join(', ')}.`, {
        field: 'extra.paymentProvider',
        options: row.carriers.map((c) => c.value),
      });
    }
    if (!MSISDN.test(extra.msisdn!)) {
      throw badRequest('extra.msisdn: enter the mobile number as 10 to 15 digits in local format, without the country code or spaces.', {
        field: 'extra.msisdn',
      });
    }
  },
  registeredAmountsOnly: true,
  callbackMustNameCheckout: true,
};
