/** What the standard `OTEL_*` variables ask of this process (read by config.ts). */
export interface TracingSettings {
  /** An OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT` or `..._TRACES_ENDPOINT`) and tracing is not switched off. */
  enabled: boolean;
  /** Where traces go: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, or `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`. */
  endpoint: string | null;
  /** `OTEL_SERVICE_NAME`, else `storefront`. */
  serviceName: string;
  /** `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`: prompts and answers go on the GenAI spans. */
  captureMessageContent: boolean;
}

/** The settings from the standard variables (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/). */
export function tracingSettingsFrom(env: Record<string, string | undefined>): TracingSettings {
  const value = (name: string) => env[name]?.trim() ?? '';
  const off = value('OTEL_SDK_DISABLED').toLowerCase() === 'true' || value('OTEL_TRACES_EXPORTER').toLowerCase() === 'none';
  const endpoint =
    value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ||
    (value('OTEL_EXPORTER_OTLP_ENDPOINT') ? `${value('OTEL_EXPORTER_OTLP_ENDPOINT').replace(/\/+$/, '')}/v1/traces` : '');
  return {
    enabled: !off && endpoint !== '',
    endpoint: off || endpoint === '' ? null : endpoint,
    serviceName: value('OTEL_SERVICE_NAME') || 'storefront',
    captureMessageContent: value('OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT').toLowerCase() === 'true',
  };
}
