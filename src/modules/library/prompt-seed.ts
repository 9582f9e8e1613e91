import type { GenerationKind, PromptVariable } from '../../db/schema/library.js';

export interface SystemPromptTemplate {
  /** Stable forever: seeding matches rows by it (change the text freely, never the key). */
  systemKey: string;
  kind: GenerationKind;
  title: string;
  body: string;
  variables: PromptVariable[];
  tags: string[];
}

const text = (name: string, label: string): PromptVariable => ({ name, label, type: 'string' });
const number = (name: string, label: string): PromptVariable => ({ name, label, type: 'number' });
const select = (name: string, label: string, options: string[]): PromptVariable => ({ name, label, type: 'select', options });

/** The system templates every user sees; `{{name}}` marks where a variable's value goes. */
export const SYSTEM_PROMPT_TEMPLATES: SystemPromptTemplate[] = [
  // Text
  {
    systemKey: 'text.blog-outline',
    kind: 'TEXT',
    title: 'Blog post outline',
    body: 'Write a detailed outline for a blog post about {{topic}} for {{audience}}. Use a {{tone}} tone. Give a working title, an introduction hook, 5 to 7 sections with two or three bullet points each, and a closing call to action.',
    variables: [text('topic', 'Topic'), text('audience', 'Audience'), select('tone', 'Tone', ['friendly', 'professional', 'playful', 'authoritative'])],
    tags: ['writing', 'blog'],
  },
  {
    systemKey: 'text.product-description',
    kind: 'TEXT',
    title: 'Product description',
    body: 'Write a product description of about {{words}} words for {{product}}. Lead with the main benefit, then cover these features: {{features}}. End with one sentence that invites the reader to buy.',
    variables: [text('product', 'Product'), text('features', 'Key features'), number('words', 'Length in words')],
    tags: ['marketing', 'ecommerce'],
  },
  {
    systemKey: 'text.social-captions',
    kind: 'TEXT',
    title: 'Social media captions',
    body: 'Write five short {{platform}} captions announcing {{announcement}}. Vary the openings, keep each under 200 characters and add two relevant hashtags to each.',
    variables: [select('platform', 'Platform', ['Instagram', 'X', 'LinkedIn', 'TikTok', 'Facebook']), text('announcement', 'What you are announcing')],
    tags: ['social', 'marketing'],
  },
  // Image
  {
    systemKey: 'image.product-photo',
    kind: 'IMAGE',
    title: 'Studio product photo',
    body: 'Professional studio product photograph of {{product}} on a {{background}} background, soft diffused key light, subtle reflection, sharp focus, high detail, commercial photography',
    variables: [text('product', 'Product'), select('background', 'Background', ['white seamless', 'pastel gradient', 'marble', 'dark slate'])],
    tags: ['product', 'photography'],
  },
  {
    systemKey: 'image.portrait',
    kind: 'IMAGE',
    title: 'Character portrait',
    body: '{{style}} portrait of {{subject}}, expressive eyes, detailed face, dramatic rim lighting, shallow depth of field, rich colours',
    variables: [text('subject', 'Who or what'), select('style', 'Style', ['Cinematic', 'Oil painting', 'Watercolour', 'Anime', '3D render'])],
    tags: ['portrait', 'character'],
  },
  {
    systemKey: 'image.landscape',
    kind: 'IMAGE',
    title: 'Epic landscape',
    body: 'Breathtaking wide-angle landscape of {{place}} at {{time}}, volumetric light, atmospheric haze, ultra detailed, award-winning nature photography',
    variables: [text('place', 'Place'), select('time', 'Time of day', ['sunrise', 'golden hour', 'blue hour', 'night under the stars'])],
    tags: ['landscape', 'nature'],
  },
  // Video
  {
    systemKey: 'video.product-reveal',
    kind: 'VIDEO',
    title: 'Product reveal',
    body: 'Slow cinematic dolly-in on {{product}} resting on a pedestal, light sweeping across its surface, particles drifting in the air, {{mood}} mood, shallow depth of field',
    variables: [text('product', 'Product'), select('mood', 'Mood', ['premium', 'energetic', 'calm', 'mysterious'])],
    tags: ['product', 'advert'],
  },
  {
    systemKey: 'video.drone-flyover',
    kind: 'VIDEO',
    title: 'Drone flyover',
    body: 'Smooth aerial drone shot gliding over {{place}}, steady forward motion, {{weather}}, natural colours, 4K documentary style',
    variables: [text('place', 'Place'), select('weather', 'Weather', ['clear skies', 'morning mist', 'dramatic storm clouds', 'light snowfall'])],
    tags: ['aerial', 'travel'],
  },
  {
    systemKey: 'video.character-action',
    kind: 'VIDEO',
    title: 'Character in motion',
    body: '{{character}} {{action}}, camera tracking alongside, dynamic lighting, realistic motion, cinematic colour grade',
    variables: [text('character', 'Character'), text('action', 'What they are doing')],
    tags: ['character', 'cinematic'],
  },
  // Audio
  {
    systemKey: 'audio.podcast-intro',
    kind: 'AUDIO',
    title: 'Podcast intro (speech)',
    body: "Welcome to {{show}}, the show about {{topic}}. I am your host, and in today's episode we dive into {{episode}}. Let's get started.",
    variables: [text('show', 'Show name'), text('topic', 'What the show is about'), text('episode', "Today's episode")],
    tags: ['speech', 'podcast'],
  },
  {
    systemKey: 'audio.background-music',
    kind: 'AUDIO',
    title: 'Background music track',
    body: '{{mood}} {{genre}} instrumental at about {{bpm}} BPM with {{instruments}}, loopable, no vocals, suitable as background music',
    variables: [
      select('genre', 'Genre', ['lo-fi hip hop', 'ambient', 'cinematic orchestral', 'synthwave', 'acoustic folk', 'house']),
      select('mood', 'Mood', ['Calm', 'Uplifting', 'Dark', 'Energetic', 'Melancholic']),
      number('bpm', 'Tempo (BPM)'),
      text('instruments', 'Instruments'),
    ],
    tags: ['music', 'background'],
  },
  {
    systemKey: 'audio.announcement',
    kind: 'AUDIO',
    title: 'Store announcement (speech)',
    body: 'Attention shoppers: {{message}} This offer is valid until {{until}}. Thank you for shopping with {{store}}.',
    variables: [text('message', 'Announcement'), text('until', 'Valid until'), text('store', 'Store name')],
    tags: ['speech', 'retail'],
  },
];
