import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type TestHarness } from '../test/harness.ts';
import type { AreaState } from './context.ts';

describe('Deps', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it("names each area's per-app state, and two apps in one process hold their own", async () => {
    const members: (keyof AreaState)[] = [
      'activeConnectionsCache',
      'activityWriter',
      'agentConfigCache',
      'conversationLog',
      'creditBank',
    ];
    const other = await h.extraApp();
    for (const app of [h.app, other]) expect(Object.keys(app.deps.areas).sort()).toEqual(members);
    for (const m of members) expect(other.deps.areas[m]).not.toBe(h.app.deps.areas[m]);
  });
});
