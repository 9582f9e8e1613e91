import { badRequest } from '../../../platform/http/errors.js';
import { FetchError, type OutboundPolicy } from '../../../platform/net/outbound-policy.js';

const BASE_URL_EXAMPLE = 'e.g. https://api.openai.com/v1';

/**
 * A base URL an operator stores is where the account's key will be sent: it passes the outbound policy (public
 * addresses only unless ALLOW_PRIVATE_NETWORK, never a metadata service, https unless the host is private). The
 * OpenAI-compatible client checks again at every new connection (`registry.ts`).
 */
export async function checkBaseUrl(outbound: Pick<OutboundPolicy, 'check'>, baseUrl: string | null | undefined): Promise<void> {
  if (baseUrl === null || baseUrl === undefined) return;
  const url = URL.canParse(baseUrl) ? new URL(baseUrl) : null;
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.username || url.password) {
    throw badRequest(`baseUrl must be an http(s) URL without credentials, ${BASE_URL_EXAMPLE}.`, { field: 'baseUrl' });
  }
  try {
    await outbound.check(url);
  } catch (err) {
    if (!(err instanceof FetchError)) throw err;
    const details = { field: 'baseUrl', reason: err.reason, ...(err.address ?? {}) };
    const ownNetwork = 'For a server on your own network, set <PROVIDER>_BASE_URL in the environment instead (or ALLOW_PRIVATE_NETWORK=true).';
    if (err.reason === 'ADDRESS_NOT_ALLOWED' && err.address?.kind === 'metadata') {
      throw badRequest(`baseUrl points to ${err.address.address}, a cloud metadata service: the account's key is never sent there.`, details);
    }
    if (err.reason === 'ADDRESS_NOT_ALLOWED' && err.address) {
      throw badRequest(
        `baseUrl points to ${err.address.address}, a ${err.address.kind} address: the account's key is sent to public internet addresses only. ${ownNetwork}`,
        details,
      );
    }
    if (err.reason === 'PROTOCOL_NOT_ALLOWED') {
      throw badRequest(
        `baseUrl must use https (${BASE_URL_EXAMPLE}): over plain http the account's key would cross the network in clear. ${err.message}`,
        details,
      );
    }
    throw badRequest(`baseUrl cannot be used: ${err.message} Check the URL.`, details);
  }
}
