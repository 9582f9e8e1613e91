import { AppError } from '../../platform/http/errors.js';
import type { FilesService } from '../files/service.js';
import type { KeptItem, KeptPart } from './responses.input.js';

/**
 * Images of stored responses. An image sent inline (a `data:` URL, up to 5 MB) is not kept in the response's row: it
 * is stored as a file of the user who sent it (counted in their storage), and the kept part names the file
 * (`file_id`) and its URL. A continuation reads the file back and sends it inline again; the file goes with the
 * response (deleted, expired after 30 days, or its owner's account deleted). Images sent as https URLs are kept as
 * the URLs they are.
 */

export type ImageFiles = Pick<FilesService, 'saveBytes' | 'readFileBytes' | 'removeFiles'>;

type InputImage = Extract<KeptPart, { type: 'input_image' }>;

const DATA_URL = /^data:([a-z0-9.+/-]+);base64,(.*)$/is;

const isInlineImage = (part: KeptPart): part is InputImage => part.type === 'input_image' && DATA_URL.test(part.image_url.slice(0, 100));

/** The items with each inline image stored as a file of `userId` (one file per distinct image), and those files. */
export async function keepImagesAsFiles(files: ImageFiles, userId: string, items: KeptItem[]): Promise<{ items: KeptItem[]; fileIds: string[] }> {
  const stored = new Map<string, { id: string; url: string }>();
  const store = async (dataUrl: string) => {
    const [, contentType, data] = DATA_URL.exec(dataUrl)!;
    const file = await files.saveBytes({ ownerId: userId, kind: 'IMAGE', contentType: contentType!, body: Buffer.from(data!.replace(/\s+/g, ''), 'base64') });
    stored.set(dataUrl, file);
    return file;
  };
  try {
    const kept: KeptItem[] = [];
    for (const item of items) {
      if (item.type !== 'message' || !item.content.some(isInlineImage)) {
        kept.push(item);
        continue;
      }
      const content: KeptPart[] = [];
      for (const part of item.content) {
        if (!isInlineImage(part)) content.push(part);
        else {
          const file = stored.get(part.image_url) ?? (await store(part.image_url));
          content.push({ type: 'input_image', image_url: file.url, file_id: file.id, detail: part.detail });
        }
      }
      kept.push({ ...item, content });
    }
    return { items: kept, fileIds: [...stored.values()].map((file) => file.id) };
  } catch (err) {
    await files.removeFiles([...stored.values()].map((file) => file.id)).catch(() => undefined);
    throw err;
  }
}

const imageGone = (previousResponseId: string, itemId: string | undefined) =>
  new AppError(
    400,
    'PREVIOUS_RESPONSE_IMAGE_NOT_FOUND',
    `The conversation of previous_response_id '${previousResponseId}' has an input image (in item ${itemId ?? 'without id'}) whose stored copy is gone. Send the conversation, with its images, as input instead.`,
    [{ field: 'previous_response_id', message: 'holds an image that is no longer stored' }],
  );

/** A conversation as kept, with its stored images inline again (what the provider is sent). */
export async function restoreKeptImages(files: ImageFiles, previousResponseId: string, items: KeptItem[]): Promise<KeptItem[]> {
  const restored: KeptItem[] = [];
  for (const item of items) {
    if (item.type !== 'message' || !item.content.some((part) => part.type === 'input_image' && part.file_id)) {
      restored.push(item);
      continue;
    }
    const content: KeptPart[] = [];
    for (const part of item.content) {
      if (part.type !== 'input_image' || !part.file_id) content.push(part);
      else {
        const file = await files.readFileBytes(part.file_id);
        if (!file) throw imageGone(previousResponseId, item.id);
        content.push({ type: 'input_image', image_url: `data:${file.contentType};base64,${file.bytes.toString('base64')}`, detail: part.detail });
      }
    }
    restored.push({ ...item, content });
  }
  return restored;
}
