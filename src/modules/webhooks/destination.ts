import { lookup } from 'node:dns/promises';
import { classifyAddress, ipLiteral } from '../../platform/net/address-policy.js';
import { badRequest } from '../../platform/http/errors.js';

export type ResolveHost = (hostname: string) => Promise<string[]>;

export const systemResolveHost: ResolveHost = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * Checks a webhook URL when it is registered or changed: https only, no credentials, and (unless private networking
 * is allowed) a host that is, and resolves only to, public internet addresses. Every delivery checks again through
 * the SSRF-safe fetcher, which connects only to the address it checked, so a name re-pointed later is refused then.
 * Returns the normalised URL.
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
    throw badRequest(`The webhook URL must use https (got "${protocol}"): deliveries carry your data and are only sent over https.`, { field: 'url', protocol });
  }
  if (url.username || url.password) {
    throw badRequest('The webhook URL must not contain a user name or password; check the signature header to authenticate deliveries instead.', { field: 'url' });
  }
  url.hash = '';
  if (options.allowPrivateNetwork) return url.href;
  const literal = ipLiteral(url.hostname);
  let addresses: string[];
  try {
    addresses = literal ? [literal] : await (options.resolve ?? systemResolveHost)(url.hostname);
  } catch {
    throw badRequest(`The host "${url.hostname}" of the webhook URL could not be found. Check the URL.`, { field: 'url', host: url.hostname });
  }
  if (addresses.length === 0) throw badRequest(`The host "${url.hostname}" of the webhook URL has no address. Check the URL.`, { field: 'url', host: url.hostname });
  for (const address of addresses) {
    const kind = classifyAddress(address);
    if (kind !== 'public') {
      throw badRequest(
        `The webhook URL points to ${address}, a ${kind} address: webhooks are delivered to public internet addresses only.`,
        { field: 'url', address, kind },
      );
    }
  }
  return url.href;
}
