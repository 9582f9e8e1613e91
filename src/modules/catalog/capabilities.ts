import type { CapabilityBlock, ControlDescriptor, ModelFeature, ModelType } from '../../db/schema/catalog.js';

/** Capabilities as clients see them: `{ flags?, controls, extra, maxBatch? }`. */
export interface Capabilities {
  flags?: Record<string, unknown>;
  controls: Record<string, unknown>;
  extra: Record<string, unknown>;
  maxBatch?: number;
}

/** Audio splits into speech and music: their controls differ (music takes no voice and no duration). */
export type CapabilityKind = Exclude<ModelType, 'AUDIO'> | 'AUDIO_SPEECH' | 'AUDIO_MUSIC';

export function capabilityKind(type: ModelType, features: readonly ModelFeature[]): CapabilityKind {
  if (type !== 'AUDIO') return type;
  return features.includes('MUSIC') && !features.includes('TTS') ? 'AUDIO_MUSIC' : 'AUDIO_SPEECH';
}

const ASPECT_RATIOS = ['16:9', '9:16', '1:1', '4:3', '3:4'];
const text = (maxOutput: number | null): CapabilityBlock => ({
  flags: { streaming: true, systemMessage: true },
  controls: {
    maxTokens: { type: 'integer', label: 'Max output tokens', min: 1, max: maxOutput ?? 32_768, default: Math.min(2048, maxOutput ?? 2048) },
    temperature: { type: 'number', label: 'Temperature', min: 0, max: 2, step: 0.1, default: 1 },
  },
  extra: {},
});

/** The built-in default per model type: what every adapter of that type honours. */
function typeDefaults(kind: CapabilityKind, features: readonly ModelFeature[], maxOutputTokens: number | null): CapabilityBlock {
  switch (kind) {
    case 'TEXT':
      return text(maxOutputTokens);
    case 'MULTIMODAL': {
      const block = text(maxOutputTokens);
      return { ...block, flags: { ...block.flags, imageInput: true } };
    }
    case 'IMAGE': {
      const controls: Record<string, ControlDescriptor> = {
        count: { type: 'integer', label: 'Images', min: 1, max: 8, default: 1 },
        width: { type: 'integer', label: 'Width', min: 256, max: 2048, step: 64, default: 1024 },
        height: { type: 'integer', label: 'Height', min: 256, max: 2048, step: 64, default: 1024 },
        seed: { type: 'integer', label: 'Seed', min: 0, max: 4_294_967_295 },
      };
      if (features.includes('IMAGE_EDIT')) {
        controls.initImageUrl = { type: 'image', label: 'Source image' };
        controls.strength = { type: 'number', label: 'Strength', min: 0, max: 1, step: 0.05, default: 0.6 };
      }
      return { controls, extra: {} };
    }
    case 'VIDEO':
      return {
        flags: { async: true },
        controls: {
          durationSeconds: { type: 'enum', label: 'Duration (seconds)', values: [5, 10], default: 5 },
          aspectRatio: { type: 'enum', label: 'Aspect ratio', values: ['16:9', '9:16', '1:1'], default: '16:9' },
          seedImageUrl: { type: 'image', label: 'Start frame', role: 'startFrame' },
          seed: { type: 'integer', label: 'Seed', min: 0, max: 4_294_967_295 },
        },
        extra: {},
      };
    case 'AUDIO_SPEECH':
      return { flags: { output: 'audio/wav' }, controls: { voice: { type: 'string', label: 'Voice' } }, extra: {} };
    case 'AUDIO_MUSIC':
      return { flags: { output: 'audio/wav' }, controls: {}, extra: {} };
    case 'EMBEDDING':
      return { controls: {}, extra: {} };
  }
}

const OPENAI_VOICES = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer'];

/** Built-in provider defaults per kind: only the controls that provider's API honours. */
const PROVIDER_DEFAULTS: Record<string, Partial<Record<CapabilityKind, CapabilityBlock>>> = {
  local: {
    IMAGE: {
      controls: {
        width: { type: 'integer', label: 'Width', min: 64, max: 1024, step: 8, default: 512 },
        height: { type: 'integer', label: 'Height', min: 64, max: 1024, step: 8, default: 512 },
      },
    },
    VIDEO: {
      controls: {
        durationSeconds: { type: 'integer', label: 'Duration (seconds)', min: 1, max: 10, default: 4 },
        aspectRatio: { type: 'enum', label: 'Aspect ratio', values: ASPECT_RATIOS, default: '16:9' },
      },
    },
    AUDIO_SPEECH: { controls: { voice: { type: 'enum', label: 'Voice', values: ['neutral', 'bright', 'deep'], default: 'neutral' } } },
  },
  openai: {
    IMAGE: {
      controls: {
        seed: null,
        width: { type: 'enum', label: 'Width', values: [1024, 1536], default: 1024 },
        height: { type: 'enum', label: 'Height', values: [1024, 1536], default: 1024 },
      },
    },
    VIDEO: {
      controls: {
        durationSeconds: { type: 'enum', label: 'Duration (seconds)', values: [4, 8, 12], default: 4 },
        aspectRatio: { type: 'enum', label: 'Aspect ratio', values: ['16:9', '9:16'], default: '16:9' },
        seed: null,
      },
    },
    AUDIO_SPEECH: {
      controls: {
        voice: { type: 'enum', label: 'Voice', values: OPENAI_VOICES, default: 'alloy' },
        speed: { type: 'number', label: 'Speed', min: 0.25, max: 4, step: 0.05, default: 1 },
      },
    },
  },
  anthropic: {
    TEXT: { controls: { temperature: { type: 'number', label: 'Temperature', min: 0, max: 1, step: 0.1, default: 1 } } },
    MULTIMODAL: { controls: { temperature: { type: 'number', label: 'Temperature', min: 0, max: 1, step: 0.1, default: 1 } } },
  },
  google: {
    // Imagen takes aspect ratios: width and height are snapped to the nearest one.
    IMAGE: { controls: { count: { type: 'integer', label: 'Images', min: 1, max: 4, default: 1 } } },
    VIDEO: {
      controls: {
        durationSeconds: { type: 'enum', label: 'Duration (seconds)', values: [8], default: 8 },
        aspectRatio: { type: 'enum', label: 'Aspect ratio', values: ['16:9', '9:16'], default: '16:9' },
        negativePrompt: { type: 'string', label: 'Negative prompt' },
      },
      extra: {
        resolution: { type: 'enum', label: 'Resolution', values: ['720p', '1080p'], default: '720p' },
        personGeneration: { type: 'enum', label: 'People', values: ['allow_all', 'allow_adult', 'dont_allow'] },
      },
    },
  },
  stability: {
    IMAGE: { controls: { negativePrompt: { type: 'string', label: 'Negative prompt' } } },
    AUDIO_MUSIC: {
      extra: {
        output_format: { type: 'enum', label: 'Format', values: ['mp3', 'wav'], default: 'mp3' },
        steps: { type: 'integer', label: 'Steps', min: 4, max: 8, default: 8 },
        cfg_scale: { type: 'number', label: 'Prompt adherence', min: 1, max: 25, step: 0.5, default: 1 },
      },
    },
  },
  bfl: {
    IMAGE: {
      controls: {
        width: { type: 'integer', label: 'Width', min: 256, max: 1440, step: 32, default: 1024 },
        height: { type: 'integer', label: 'Height', min: 256, max: 1440, step: 32, default: 1024 },
      },
    },
  },
  ideogram: {
    IMAGE: { controls: { negativePrompt: { type: 'string', label: 'Negative prompt' } } },
  },
  recraft: { IMAGE: { controls: { seed: null } } },
  kling: {
    VIDEO: {
      controls: {
        aspectRatio: { type: 'enum', label: 'Aspect ratio', values: ['16:9', '9:16', '1:1'], default: '16:9' },
        endImageUrl: { type: 'image', label: 'End frame', role: 'endFrame' },
        negativePrompt: { type: 'string', label: 'Negative prompt' },
        seed: null,
      },
      extra: {
        cfg_scale: { type: 'number', label: 'Prompt adherence', min: 0, max: 1, step: 0.1, default: 0.5 },
        mode: { type: 'enum', label: 'Mode', values: ['std', 'pro'], default: 'std' },
        camera_control: { type: 'object', label: 'Camera control' },
        static_mask: { type: 'string', label: 'Motion brush: static area' },
        dynamic_masks: { type: 'object', label: 'Motion brush' },
      },
    },
  },
  runway: {
    VIDEO: {
      controls: {
        aspectRatio: { type: 'enum', label: 'Aspect ratio', values: ASPECT_RATIOS, default: '16:9' },
        seedImageUrl: { type: 'image', label: 'Start frame', role: 'startFrame' },
      },
      extra: { contentModeration: { type: 'object', label: 'Content moderation' } },
    },
  },
  minimax: {
    VIDEO: {
      controls: {
        durationSeconds: { type: 'enum', label: 'Duration (seconds)', values: [6, 10], default: 6 },
        aspectRatio: null,
        seed: null,
      },
      // A resolution other than the default is taken only where the model prices it (see the seeded models).
      extra: {
        resolution: { type: 'enum', label: 'Resolution', values: ['768P'], default: '768P' },
        prompt_optimizer: { type: 'boolean', label: 'Prompt optimizer', default: true },
        fast_pretreatment: { type: 'boolean', label: 'Fast prompt optimization', default: false },
      },
    },
  },
  elevenlabs: {
    AUDIO_SPEECH: {
      controls: { voice: { type: 'string', label: 'Voice ID', default: '21m00Tcm4TlvDq8ikWAM' } },
      extra: {
        stability: { type: 'number', label: 'Stability', min: 0, max: 1, step: 0.05, default: 0.5 },
        similarity_boost: { type: 'number', label: 'Similarity', min: 0, max: 1, step: 0.05, default: 0.75 },
        style: { type: 'number', label: 'Style exaggeration', min: 0, max: 1, step: 0.05, default: 0 },
        use_speaker_boost: { type: 'boolean', label: 'Speaker boost', default: true },
      },
    },
  },
  groq: {
    AUDIO_SPEECH: {
      controls: {
        voice: {
          type: 'enum',
          label: 'Voice',
          values: ['Arista-PlayAI', 'Atlas-PlayAI', 'Celeste-PlayAI', 'Fritz-PlayAI', 'Quinn-PlayAI'],
          default: 'Fritz-PlayAI',
        },
      },
    },
  },
};

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Deep merge where the override wins: objects merge key by key, arrays and scalars replace, `null` removes the key.
 * A control descriptor whose `type` changes is replaced whole (an integer range does not inherit an enum's values).
 */
export function deepMerge<T extends Record<string, unknown>>(base: T, override: Record<string, unknown> | undefined): T {
  if (!override) return base;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = out[key];
    if (value === null) delete out[key];
    else if (isPlainObject(value) && isPlainObject(current) && !('type' in value && 'type' in current && value.type !== current.type)) {
      out[key] = deepMerge(current, value);
    } else if (value !== undefined) out[key] = structuredClone(value);
  }
  return out as T;
}

export interface CapabilityInput {
  type: ModelType;
  features: readonly ModelFeature[];
  maxOutputTokens: number | null;
  maxBatch: number | null;
  providerSlug: string;
  /** The provider row's administrator overrides, keyed by kind. */
  providerOverrides: Partial<Record<string, CapabilityBlock>>;
  modelOverride: CapabilityBlock;
}

/** Type default ← built-in provider default ← provider override ← model override (each wins over the previous). */
export function mergeCapabilities(input: CapabilityInput): Capabilities {
  const kind = capabilityKind(input.type, input.features);
  let merged = typeDefaults(kind, input.features, input.maxOutputTokens) as Record<string, unknown>;
  merged = deepMerge(merged, PROVIDER_DEFAULTS[input.providerSlug]?.[kind] as Record<string, unknown> | undefined);
  merged = deepMerge(merged, (input.providerOverrides[kind] ?? input.providerOverrides[input.type]) as Record<string, unknown> | undefined);
  merged = deepMerge(merged, input.modelOverride as Record<string, unknown>);
  const result: Capabilities = {
    controls: isPlainObject(merged.controls) ? merged.controls : {},
    extra: isPlainObject(merged.extra) ? merged.extra : {},
  };
  if (isPlainObject(merged.flags) && Object.keys(merged.flags).length > 0) result.flags = merged.flags;
  const maxBatch = input.maxBatch ?? (typeof merged.maxBatch === 'number' ? merged.maxBatch : undefined);
  if (maxBatch !== undefined) result.maxBatch = maxBatch;
  return result;
}
