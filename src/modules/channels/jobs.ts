import { z } from 'zod';
import type { ChannelType } from '../../db/schema/index.ts';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { enqueuerFor } from '../../jobs/queue.ts';
import { type Platform, processDelivery } from './inbound.ts';
import * as repo from './repo.ts';
import { telegramPlatform } from './telegram.platform.ts';
import { whatsappPlatform } from './whatsapp.ts';

/** The platform of each channel type that delivers through jobs (web chat answers in its request). */
export const PLATFORMS: Partial<Record<ChannelType, Platform>> = {
  telegram: telegramPlatform,
  whatsapp: whatsappPlatform,
};

/** Background work of messaging channels: each delivery's agent run and reply, off the webhook's request. */
export const channelJobs = {
  'channels.deliver': defineJob({
    payload: z.object({ channelId: z.string(), key: z.string() }),
    retry: { maxAttempts: 6, baseDelayMs: 5_000 },
    run: async (deps, { channelId, key }, job) => {
      const db = deps.database.db;
      const channel = await repo.findChannelById(db, channelId);
      // The channel was deleted since: nothing to answer.
      if (!channel) return { skipped: 'channel deleted' };
      const platform = PLATFORMS[channel.type];
      const delivery = await repo.findDelivery(db, channelId, key);
      if (!platform || !delivery) return { skipped: 'nothing to deliver' };
      return processDelivery(deps, platform, channel, delivery, job);
    },
  }),
} satisfies JobCatalog;

/** Queues a job of this area (inside the caller's transaction when given one). */
export const enqueueChannelJob = enqueuerFor(channelJobs);
