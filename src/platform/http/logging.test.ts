import { describe, expect, it } from 'vitest';
import { redactUrl } from './logging.js';

describe('redactUrl', () => {
  it('masks single-use secrets in query strings and keeps the rest', () => {
    expect(redactUrl('/v1/files/upload/abc?token=s3cr3t&part=1')).toBe('/v1/files/upload/abc?token=[redacted]&part=1');
    expect(redactUrl('/v1/auth/idp/callback?code=xyz&state=abc')).toBe('/v1/auth/idp/callback?code=[redacted]&state=[redacted]');
    expect(redactUrl('/v1/models?type=TEXT')).toBe('/v1/models?type=TEXT');
  });
});
