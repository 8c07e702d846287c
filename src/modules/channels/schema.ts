import { z } from 'zod';
import { Timestamp } from '../../lib/pagination.ts';

/** SPEC §2 "Messaging channel" and §4 "Messaging channels": request and response shapes. */

const secret = (what: string) => z.string().trim().min(1).max(1000).describe(what);
const origin = z
  .string()
  .trim()
  .max(300)
  .regex(/^https?:\/\/[^/\s?#]+$/, 'an origin: scheme://host[:port], no path');

export const TelegramConfig = z
  .object({ botToken: secret('the token @BotFather gave (sealed at rest, never returned)') })
  .strict();
export const WhatsappConfig = z
  .object({
    phoneNumberId: z
      .string()
      .trim()
      .regex(/^\d{1,30}$/, 'digits'),
    accessToken: secret('a Cloud API access token (sealed, never returned)'),
    verifyToken: secret('the verify token you enter in the Meta app webhook settings (stored hashed)'),
    appSecret: secret('extension: the Meta app secret that signs deliveries (else WHATSAPP_APP_SECRET)').optional(),
  })
  .strict();
export const WebchatConfig = z
  .object({
    allowedOrigins: z
      .array(origin)
      .max(50)
      .describe('extension: browser origins whose pages may post; empty or absent: any')
      .optional(),
  })
  .strict();

export const ChannelType = z.enum(['telegram', 'whatsapp', 'webchat']);

export const CreateChannel = z.discriminatedUnion('type', [
  z.object({ type: z.literal('telegram'), agentId: z.string().min(1).max(100), config: TelegramConfig }).strict(),
  z.object({ type: z.literal('whatsapp'), agentId: z.string().min(1).max(100), config: WhatsappConfig }).strict(),
  z
    .object({
      type: z.literal('webchat'),
      agentId: z.string().min(1).max(100),
      config: WebchatConfig.default({}),
    })
    .strict(),
]);
export type CreateChannel = z.infer<typeof CreateChannel>;

/** SPEC leaves PUT's body open: the agent, and config fields of the channel's type (secrets replaced when given). */
export const UpdateChannel = z
  .object({
    agentId: z.string().min(1).max(100).optional(),
    config: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type UpdateChannel = z.infer<typeof UpdateChannel>;

export const ChannelParams = z.object({ channelId: z.string().min(1).max(100) });

export const LinkedUser = z.object({
  externalUserId: z.string(),
  displayName: z.string(),
  linkedAt: Timestamp,
});

export const Channel = z
  .object({
    id: z.string(),
    accountId: z.string(),
    type: ChannelType,
    agentId: z.string(),
    config: z
      .object({
        botUsername: z.string().optional(),
        botId: z.string().optional(),
        botTokenSet: z.boolean().optional(),
        phoneNumberId: z.string().optional(),
        accessTokenSet: z.boolean().optional(),
        verifyTokenSet: z.boolean().optional(),
        appSecretSet: z.boolean().optional(),
        allowedOrigins: z.array(z.string()).optional(),
      })
      .describe('the public fields; each secret only as `<name>Set`'),
    webhookUrl: z.string().optional().describe('where the platform delivers (telegram, whatsapp)'),
    widgetSnippet: z.string().optional().describe('web chat: the HTML to paste into a page'),
    linkedUsers: z.array(LinkedUser),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'MessagingChannel' });
export type Channel = z.infer<typeof Channel>;

export const LinkCode = z.object({
  code: z.string(),
  expiresAt: Timestamp,
  link: z.string().optional().describe('telegram: the deep link that sends the code'),
  instructions: z.string(),
});
export type LinkCode = z.infer<typeof LinkCode>;

export const UnlinkAccount = z
  .object({ externalUserId: z.string().min(1).max(200).optional().describe('absent: every linked user') })
  .strict();

export const Delivery = z.object({
  key: z.string(),
  direction: z.enum(['in', 'out']),
  chatId: z.string().nullable(),
  senderId: z.string().nullable(),
  status: z.string(),
  error: z.string().nullable(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Delivery = z.infer<typeof Delivery>;

export const WebchatMessage = z
  .object({
    channelId: z.string().min(1).max(100),
    content: z.string().trim().min(1).max(4000),
    visitorToken: z.string().min(1).max(200).optional(),
    clientMessageId: z.string().min(1).max(100).optional(),
  })
  .strict();
export type WebchatMessage = z.infer<typeof WebchatMessage>;

export const WebchatReply = z.object({
  reply: z.string(),
  visitorToken: z.string(),
  conversationId: z.string(),
});
export type WebchatReply = z.infer<typeof WebchatReply>;
