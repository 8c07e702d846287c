import { randomBytes } from 'node:crypto';
import type { ServiceContext } from '../../context.ts';
import * as repo from './repo.ts';
import { recordDelivery } from './webhooks.service.ts';

export interface ChannelPush {
  /** Pushes queued: one per linked user of each Telegram or WhatsApp channel of the agent. */
  queued: number;
  /** The channels they go through. */
  channelIds: string[];
}

/**
 * Sends `text` from the agent to the people linked on its messaging channels (Telegram, WhatsApp; a web chat
 * has no one to push to): for scheduled tasks' results "when the agent has a messaging channel". Each push is a
 * delivery sent by a job, so it survives a crash and is retried; `key` (for example the task run's id) makes a
 * retried caller push once. WhatsApp pushes outside the 24-hour window are recorded as failed with the reason.
 * Called from code with the account's context; answers 0 queued when the agent has no channel or no one linked.
 */
export async function deliverToAgentChannels(
  ctx: Pick<ServiceContext, 'db' | 'accountId'>,
  agentId: string,
  text: string,
  opts: { key?: string } = {},
): Promise<ChannelPush> {
  const key = opts.key ?? randomBytes(12).toString('base64url');
  const channels = (await repo.channelsOfAgent(ctx.db, ctx.accountId, agentId)).filter((c) => c.type !== 'webchat');
  let queued = 0;
  const channelIds: string[] = [];
  for (const channel of channels) {
    const links = await repo.linksOf(ctx.db, channel.id);
    if (links.length) channelIds.push(channel.id);
    for (const link of links) {
      const fresh = await recordDelivery(
        ctx.db,
        channel,
        `push:${key}:${link.externalUserId}`,
        {},
        {
          direction: 'out',
          chatId: link.chatId,
          senderId: null,
          reply: text,
          status: 'answered',
        },
      );
      if (fresh) queued++;
    }
  }
  return { queued, channelIds };
}
