/**
 * Query parameters that carry credentials in signed or keyed URLs (S3/GCS/Azure/CloudFront signatures,
 * API keys, access tokens). Matched case-insensitively on the whole name.
 */
const CREDENTIAL_PARAMS = new Set([
  // AWS SigV4 / SigV2 and CloudFront
  'x-amz-algorithm',
  'x-amz-credential',
  'x-amz-date',
  'x-amz-expires',
  'x-amz-signedheaders',
  'x-amz-signature',
  'x-amz-security-token',
  'awsaccesskeyid',
  'signature',
  'expires',
  'policy',
  'key-pair-id',
  // Google Cloud Storage
  'x-goog-algorithm',
  'x-goog-credential',
  'x-goog-date',
  'x-goog-expires',
  'x-goog-signedheaders',
  'x-goog-signature',
  'googleaccessid',
  // Azure SAS
  'sig',
  'se',
  'st',
  'sp',
  'sv',
  'sr',
  'spr',
  'skoid',
  'sktid',
  'skt',
  'ske',
  'sks',
  'skv',
  'sip',
  'ss',
  'srt',
  // generic keys and tokens
  'token',
  'access_token',
  'id_token',
  'refresh_token',
  'auth',
  'authorization',
  'key',
  'api_key',
  'apikey',
  'api-key',
  'secret',
  'client_secret',
  'password',
  'pass',
  'pwd',
  'session',
  'sessionid',
  'credential',
  'credentials',
  'hmac',
]);

/** Names that look like a credential even when they are not in the list above. */
const CREDENTIAL_PATTERN = /(signature|secret|token|password|credential|api[-_]?key|access[-_]?key)/i;

export const isCredentialParam = (name: string): boolean => CREDENTIAL_PARAMS.has(name.toLowerCase()) || CREDENTIAL_PATTERN.test(name);

/**
 * The URL without anything that could grant access: user info, credential query parameters and the fragment.
 * Used before a source URL is recorded (for example where provider media was copied from). A value that is not
 * a URL is returned as null, so nothing unparsed is ever stored.
 */
export function stripUrlCredentials(input: string): string | null {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return null;
  }
  if (url.protocol === 'data:') return null;
  url.username = '';
  url.password = '';
  url.hash = '';
  for (const name of [...new Set(url.searchParams.keys())]) {
    if (isCredentialParam(name)) url.searchParams.delete(name);
  }
  return url.href;
}
