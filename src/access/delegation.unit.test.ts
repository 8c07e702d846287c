import { describe, expect, it } from 'vitest';
import type { Actor } from '../context.ts';
import { coversDelegation, delegationOf, intersectDelegations, readDelegation } from './delegation.ts';

const actor: Actor = {
  kind: 'pat',
  accountId: 'acc_1',
  tokenId: 'pat_1',
  scopes: new Set(['messaging-channels', 'agents-use']),
  providerPermissions: { github: 'read-write' },
  defaultProviderPermission: 'read',
  allowedKnowledgeBaseIds: ['kb_a'],
  creditBalance: 5,
};

describe('delegation', () => {
  it("keeps an actor's whole restriction set, and reads it back as it was", () => {
    const d = delegationOf(actor);
    expect(d).toEqual({
      scopes: ['agents-use', 'messaging-channels'],
      providerPermissions: { github: 'read-write' },
      defaultProviderPermission: 'read',
      allowedKnowledgeBaseIds: ['kb_a'],
    });
    expect(readDelegation(JSON.parse(JSON.stringify(d)), ['agents-all'])).toEqual(d);
    const { allowedKnowledgeBaseIds: _, ...unlimited } = actor;
    expect(delegationOf(unlimited).allowedKnowledgeBaseIds).toBeNull();
    expect(readDelegation(delegationOf(unlimited), []).allowedKnowledgeBaseIds).toBeNull();
  });

  it('reads what an older row lacks as the narrowest value, and what it cannot read as nothing', () => {
    expect(
      readDelegation({ providerPermissions: { github: 'read-write' }, defaultProviderPermission: 'read-write' }, [
        'agents-all',
      ]),
    ).toEqual({
      scopes: ['agents-all'],
      providerPermissions: { github: 'read-write' },
      defaultProviderPermission: 'read-write',
      allowedKnowledgeBaseIds: [],
    });
    expect(readDelegation(null, ['agents-use'])).toEqual({
      scopes: ['agents-use'],
      providerPermissions: {},
      defaultProviderPermission: 'read',
      allowedKnowledgeBaseIds: [],
    });
    expect(readDelegation({ scopes: ['agents-all', 'no-such-scope'] }, []).scopes).toEqual(['agents-all']);
    const garbage = { defaultProviderPermission: 'admin' } as unknown as Parameters<typeof readDelegation>[0];
    expect(readDelegation(garbage, ['agents-all'])).toEqual({
      scopes: [],
      providerPermissions: {},
      defaultProviderPermission: 'read',
      allowedKnowledgeBaseIds: [],
    });
  });

  it('intersects two sets: common scopes and bases, the narrower permission on every provider', () => {
    const a = delegationOf(actor);
    const b = {
      scopes: ['agents-use' as const, 'account' as const],
      providerPermissions: { github: 'read' as const, notion: 'read-write' as const },
      defaultProviderPermission: 'read-write' as const,
      allowedKnowledgeBaseIds: null,
    };
    expect(intersectDelegations(a, b)).toEqual({
      scopes: ['agents-use'],
      providerPermissions: { github: 'read', notion: 'read' },
      defaultProviderPermission: 'read',
      allowedKnowledgeBaseIds: ['kb_a'],
    });
    expect(
      intersectDelegations(b, { ...b, allowedKnowledgeBaseIds: ['kb_a', 'kb_b'] }).allowedKnowledgeBaseIds,
    ).toEqual(['kb_a', 'kb_b']);
    expect(intersectDelegations({ ...b, allowedKnowledgeBaseIds: ['kb_b'] }, a).allowedKnowledgeBaseIds).toEqual([]);
    expect(intersectDelegations(b, b)).toEqual(b);
  });

  it('a set covers another when it allows at least as much: scopes, each provider, knowledge bases', () => {
    const task = delegationOf(actor);
    const all = { ...task, allowedKnowledgeBaseIds: null, defaultProviderPermission: 'read-write' as const };
    expect(coversDelegation(task, task)).toBe(true);
    expect(coversDelegation(all, task)).toBe(true);
    expect(coversDelegation(task, all)).toBe(false);
    expect(coversDelegation({ ...task, scopes: ['agents-use'] }, task)).toBe(false);
    expect(coversDelegation({ ...task, providerPermissions: {} }, task)).toBe(false);
    expect(coversDelegation({ ...task, providerPermissions: { github: 'read-write', slack: 'read' } }, task)).toBe(
      true,
    );
    expect(coversDelegation({ ...task, allowedKnowledgeBaseIds: ['kb_b'] }, task)).toBe(false);
    expect(coversDelegation({ ...task, allowedKnowledgeBaseIds: ['kb_b', 'kb_a'] }, task)).toBe(true);
  });
});
