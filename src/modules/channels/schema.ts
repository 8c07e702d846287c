import { z } from 'zod';
import { Timestamp } from '../../lib/pagination.ts';

/** SPEC §2 "Messaging channel" and §4 "Messaging channels": request and response shapes. */

/** The agent a channel answers with: its id, or `default`. */
const agentRef = z
  .string()
  .min(1)
  .max(100)
  .meta({ examples: ['agt_5kY0bq9xTnq1y8Wv3mDgZA'] });
const secret = (what: string) => z.string().trim().min(1).max(1000).describe(what);
const origin = z
  .string()
  .trim()
  .max(300)
  .regex(/^https?:\/\/[^/\s?#]+$/, 'an origin: scheme://host[:port], no path');

export const TelegramConfig = z
  .object({
    botToken: secret('the token @BotFather gave (sealed at rest, never returned)').meta({
      examples: ['7412345678:AAHk3v9dH2TQm0bq1yWzY8cAxQm3v0bq9xT'],
    }),
  })
  .strict();
export const WhatsappConfig = z
  .object({
    phoneNumberId: z
      .string()
      .trim()
      .regex(/^\d{1,30}$/, 'digits'),
    accessToken: secret('a Cloud API access token (sealed, never returned)').meta({
      examples: ['EAAGm0PX4ZCpsBAKZCZAhZBq3v9dH2TQm0bq1yWzY8cA'],
    }),
    verifyToken: secret('the verify token you enter in the Meta app webhook settings (stored hashed)').meta({
      examples: ['my-verify-token'],
    }),
    appSecret: secret('extension: the Meta app secret that signs deliveries (else WHATSAPP_APP_SECRET)')
      .meta({ examples: ['3f1c9a7e2b4d6f8a0c1e3b5d7f9a1c3e'] })
      .optional(),
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
  z.object({ type: z.literal('telegram'), agentId: agentRef, config: TelegramConfig }).strict(),
  z.object({ type: z.literal('whatsapp'), agentId: agentRef, config: WhatsappConfig }).strict(),
  z
    .object({
      type: z.literal('webchat'),
      agentId: agentRef,
      config: WebchatConfig.default({}),
    })
    .strict(),
]);
export type CreateChannel = z.infer<typeof CreateChannel>;

/** SPEC leaves PUT's body open: the agent, and config fields of the channel's type (secrets replaced when given). */
export const UpdateChannel = z
  .object({
    agentId: agentRef.optional(),
    config: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type UpdateChannel = z.infer<typeof UpdateChannel>;

export const ChannelParams = z.object({ channelId: z.string().min(1).max(100) });

export const LinkedUser = z.object({
  externalUserId: z.string().meta({ examples: ['123456789'] }),
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
  code: z.string().meta({ examples: ['K7QX-2M9P'] }),
  expiresAt: Timestamp,
  link: z
    .string()
    .optional()
    .describe('telegram: the deep link that sends the code')
    .meta({ examples: ['https://t.me/acme_support_bot?start=K7QX-2M9P'] }),
  instructions: z.string().meta({ examples: ['Send /start K7QX-2M9P to @acme_support_bot within 10 minutes.'] }),
});
export type LinkCode = z.infer<typeof LinkCode>;

export const UnlinkAccount = z
  .object({
    externalUserId: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('absent: every linked user')
      .meta({ examples: ['123456789'] }),
  })
  .strict();

export const Delivery = z.object({
  key: z.string().meta({ examples: ['telegram:7412345678:1042'] }),
  direction: z.enum(['in', 'out']),
  chatId: z.string().nullable(),
  senderId: z.string().nullable(),
  status: z.string().meta({ examples: ['delivered'] }),
  error: z.string().nullable(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Delivery = z.infer<typeof Delivery>;

export const WebchatMessage = z
  .object({
    channelId: z
      .string()
      .min(1)
      .max(100)
      .meta({ examples: ['mch_5kY0bq9xTnq1y8Wv3mDgZA'] }),
    content: z
      .string()
      .trim()
      .min(1)
      .max(4000)
      .meta({ examples: ['Where is my order 1042?'] }),
    visitorToken: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .meta({ examples: ['wct_Hq9xTnq1y8Wv3mDgZA5kY0bq9xTnq1y8Wv3mDgZA5kY0b'] }),
    clientMessageId: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .meta({ examples: ['msg-2026-11-24-0001'] }),
  })
  .strict();
export type WebchatMessage = z.infer<typeof WebchatMessage>;

export const WebchatReply = z.object({
  reply: z.string().meta({ examples: ['Order 1042 left our warehouse yesterday; it arrives Thursday.'] }),
  visitorToken: z.string().meta({ examples: ['wct_Hq9xTnq1y8Wv3mDgZA5kY0bq9xTnq1y8Wv3mDgZA5kY0b'] }),
  conversationId: z.string().meta({ examples: ['conv_5kY0bq9xTnq1y8Wv3mDgZA'] }),
});
export type WebchatReply = z.infer<typeof WebchatReply>;
