import { badRequest } from '../../platform/http/errors.js';
import { assertSafeKey } from '../../platform/storage/storage.js';

export const RAW_PATH = '/v1/files/raw/';

/** Our raw-file URLs under PUBLIC_BASE_URL: made from a storage key, and read back into one. */
export function createRawUrls(publicBaseUrl: string) {
  const base = new URL(publicBaseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');

  /** The storage key of one of our raw-file URLs (absolute under PUBLIC_BASE_URL, or same-origin relative), else null. */
  function ownKeyOf(url: string): string | null {
    let path: string;
    if (url.startsWith(RAW_PATH) || url.startsWith(`${basePath}${RAW_PATH}`)) {
      path = url.replace(/[?#].*$/, '');
      if (basePath && path.startsWith(basePath + RAW_PATH)) path = path.slice(basePath.length);
    } else {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        return null;
      }
      if (parsed.origin !== base.origin || !parsed.pathname.startsWith(`${basePath}${RAW_PATH}`)) return null;
      path = parsed.pathname.slice(basePath.length);
    }
    let key: string;
    try {
      key = decodeURIComponent(path.slice(RAW_PATH.length));
      assertSafeKey(key);
    } catch {
      throw badRequest('That is not a valid /v1/files/raw/ URL.');
    }
    return key;
  }

  return {
    rawUrl: (key: string) => `${publicBaseUrl}${RAW_PATH}${key}`,
    ownKeyOf,
  };
}
