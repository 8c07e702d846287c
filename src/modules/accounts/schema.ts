import { z } from 'zod';

export const Account = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string(),
    avatar: z.string().describe('Avatar URL: the uploaded image, or a generated initials image'),
    creditBalance: z
      .number()
      .int()
      .describe(
        'Credits (1 credit = 0.0001 USD): the balance after every answered request, as X-Credits-Remaining told it',
      ),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Account' });
export type Account = z.infer<typeof Account>;

const AVATAR_DATA_URI = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}$/;
const MAX_AVATAR_BYTES = 100 * 1024;

export const AvatarInput = z
  .string()
  .max(Math.ceil((MAX_AVATAR_BYTES * 4) / 3) + 64, 'avatar image must be at most 100 KB')
  .refine(
    (v) => AVATAR_DATA_URI.test(v) || /^https?:\/\/[^\s]+$/.test(v),
    'avatar must be an http(s) URL or a base64 data URI of a PNG, JPEG, GIF or WEBP image',
  );

export const UpdateAccount = z
  .object({
    name: z.string().trim().min(1).max(100).optional(),
    avatar: AvatarInput.nullable().optional().describe('null removes the avatar'),
  })
  .strict()
  .meta({ id: 'UpdateAccount' });
export type UpdateAccount = z.infer<typeof UpdateAccount>;

export const AccountParams = z.object({ accountId: z.string().min(1).max(100) });
