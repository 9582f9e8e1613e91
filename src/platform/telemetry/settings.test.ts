import { describe, expect, it } from 'vitest';
import { tracingSettingsFrom } from './settings.js';

describe('tracing settings from the standard OTEL_* variables', () => {
  it('is off without an OTLP endpoint, and an empty one is none', () => {
    expect(tracingSettingsFrom({})).toEqual({ enabled: false, endpoint: null, serviceName: 'storefront', captureMessageContent: false });
    expect(tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }).enabled).toBe(false);
  });

  it('sends to <endpoint>/v1/traces, or to the traces endpoint as it is', () => {
    expect(tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toMatchObject({
      enabled: true,
      endpoint: 'http://collector:4318/v1/traces',
    });
    expect(
      tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://tempo.example/otlp/v1/traces' })
        .endpoint,
    ).toBe('https://tempo.example/otlp/v1/traces');
  });

  it('is switched off by OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none, whatever the endpoint', () => {
    expect(tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'TRUE' })).toMatchObject({ enabled: false, endpoint: null });
    expect(tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }).enabled).toBe(false);
  });

  it('takes the service name and the content opt-in', () => {
    expect(tracingSettingsFrom({ OTEL_SERVICE_NAME: 'gateway-eu', OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'True' })).toMatchObject({
      serviceName: 'gateway-eu',
      captureMessageContent: true,
    });
    expect(tracingSettingsFrom({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'yes' }).captureMessageContent).toBe(false);
  });
});
