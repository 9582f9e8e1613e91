import { startChatCompletions } from '../../../../../test/helpers/fakes/chat-completions.js';
import { unknownKeys, type OpenAiDialect, type Refusal, type StartTextFake } from '../../../../../test/helpers/fakes/text-fake.js';

/** Google's OpenAI compatibility: a proto-backed endpoint that refuses unknown fields (github.com/Vali-98/ChatterUI/issues/227). */
const GOOGLE_FIELDS = [
  'model',
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'n',
  'stream',
  'stream_options',
  'stop',
  'tools',
  'tool_choice',
  'response_format',
  'reasoning_effort',
  'extra_body',
  'service_tier',
];
function refuseGoogle(body: any): Refusal {
  const unknown = unknownKeys(body, GOOGLE_FIELDS);
  if (unknown.length === 0) return null;
  const violations = unknown.map((name) => ({ description: `Invalid JSON payload received. Unknown name "${name}": Cannot find field.` }));
  const message = violations.map((v) => v.description).join('\n');
  return {
    status: 400,
    body: [
      {
        error: {
          code: 400,
          message,
          status: 'INVALID_ARGUMENT',
          details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: violations }],
        },
      },
    ],
  };
}

export const dialect: OpenAiDialect = { refuse: refuseGoogle };

/** The provider's chat-completions API (`/v1`), answering as `startChatCompletions` does when the request passes. */
export const startTextFake: StartTextFake = (decide) => startChatCompletions(dialect, decide);
