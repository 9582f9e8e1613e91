import { isIPv6 } from 'node:net';
import { createOutboundPolicy, FetchError, type ResolveAddresses } from '../../platform/net/outbound-policy.js';
import { badRequest } from '../../platform/http/errors.js';

export type ResolveHost = (hostname: string) => Promise<string[]>;

const addressesOf =
  (resolve: ResolveHost): ResolveAddresses =>
  async (hostname) =>
    (await resolve(hostname)).map((address) => ({ address, family: isIPv6(address) ? 6 : 4 }));

/**
 * Checks a webhook URL when it is registered or changed, by the outbound policy every delivery passes again (the
 * SSRF-safe fetcher, which connects only to the address it checked, so a name re-pointed later is refused then):
 * http(s) without credentials; a host that is, and resolves only to, public internet addresses, unless private
 * networking is allowed; https, except for a private or loopback host when private networking is allowed. Returns
 * the normalised URL.
 */
export async function checkWebhookUrl(input: string, options: { allowPrivateNetwork: boolean; resolve?: ResolveHost }): Promise<string> {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw badRequest('The webhook URL is not a valid absolute URL, e.g. https://example.com/hooks/storefront.', { field: 'url' });
  }
  const protocol = url.protocol.replace(/:$/, '');
  if (protocol !== 'https' && !(protocol === 'http' && options.allowPrivateNetwork)) {
    throw badRequest(`The webhook URL must use https (got "${protocol}"): deliveries carry your data and are only sent over https.`, {
      field: 'url',
      protocol,
    });
  }
  if (url.username || url.password) {
    throw badRequest('The webhook URL must not contain a user name or password; check the signature header to authenticate deliveries instead.', {
      field: 'url',
    });
  }
  url.hash = '';
  const policy = createOutboundPolicy({ allowPrivateNetwork: options.allowPrivateNetwork, resolve: options.resolve && addressesOf(options.resolve) });
  try {
    await policy.check(url);
  } catch (err) {
    throw err instanceof FetchError ? refusal(url, err) : err;
  }
  return url.href;
}

function refusal(url: URL, err: FetchError) {
  const host = url.hostname;
  if (err.reason === 'DNS_FAILED') {
    return badRequest(`The host "${host}" of the webhook URL could not be found. Check the URL.`, { field: 'url', host });
  }
  if (err.reason === 'ADDRESS_NOT_ALLOWED' && err.address) {
    const { address, kind } = err.address;
    return badRequest(`The webhook URL points to ${address}, a ${kind} address: webhooks are delivered to public internet addresses only.`, {
      field: 'url',
      address,
      kind,
    });
  }
  if (err.reason === 'PROTOCOL_NOT_ALLOWED' && err.address) {
    const { address } = err.address;
    return badRequest(
      `The webhook URL must use https: "${host}" is a public address (${address}), and plain http is accepted for private and loopback hosts only.`,
      { field: 'url', protocol: 'http', address },
    );
  }
  return badRequest(`The webhook URL cannot be used: ${err.message}`, { field: 'url' });
}
