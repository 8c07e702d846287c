import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ELF_BYTES, makeBombDocx, makeBombPdf, makeCrowdedDocx, makeDocx, makePdf } from '../../../test/documents.ts';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { peakGrowth } from '../../../test/memory.ts';
import { chatFiles } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';

/** Chat files: uploaded over real HTTP as multipart, read by the agent, refused by their bytes and their size. */
describe('chat files', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let base = '';
  let small: App;
  let smallBase = '';
  let seeing: App;
  let seeingBase = '';

  const urlOf = (app: App) => {
    const addr = app.server.address();
    return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/api/v1`;
  };
  beforeAll(async () => {
    llm = await startFakeLlm();
    const env = { LLM_BASE_URL: llm.url, LLM_MODELS: 'fake-model=1000000/2000000' };
    h = await createHarness(env);
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    base = urlOf(h.app);
    small = await h.extraApp({ ...env, CHAT_FILE_MAX_BYTES: '2000' });
    await small.listen({ port: 0, host: '127.0.0.1' });
    smallBase = urlOf(small);
    // A catalog whose model has vision, served by the same fake upstream.
    const modelsFile = join(mkdtempSync(join(tmpdir(), 'sb-vision-')), 'models.json');
    const capabilities = { tools: true, vision: true, streaming: true, json: true };
    const vision = { upstream: 'custom', tier: 'custom', promptRate: 1000, completionRate: 2000, capabilities };
    const sizes = { contextWindow: 128_000, maxOutputTokens: 4096 };
    writeFileSync(
      modelsFile,
      JSON.stringify({ models: [{ id: 'fake-vision', upstreamModel: 'fake-vision', ...vision, ...sizes }] }),
    );
    seeing = await h.extraApp({ LLM_BASE_URL: llm.url, MODELS_FILE: modelsFile, DEFAULT_MODEL: 'fake-vision' });
    await seeing.listen({ port: 0, host: '127.0.0.1' });
    seeingBase = urlOf(seeing);
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
  });
  beforeEach(() => {
    llm.reset();
    llm.requests.length = 0;
  });

  const agentOf = async (u: TestUser) =>
    (await call(h.app, 'POST', '/api/v1/agents', { token: u.sessionToken, body: { name: 'Reader' } })).json()
      .id as string;
  const upload = (u: TestUser, agent: string, bytes: Buffer, filename: string, url = base) => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)]), filename);
    return fetch(`${url}/agents/${agent}/chat/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${u.sessionToken}` },
      body: form,
    });
  };
  const chatWith = (u: TestUser, agent: string, fileId: string, text: string) =>
    call(h.app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
      token: u.sessionToken,
      body: {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text },
              { type: 'file', file: { file_id: fileId } },
            ],
          },
        ],
      },
    });

  it('a PDF and a DOCX made here are read by the agent', async () => {
    const u = await createUser(h.app);
    const agent = await agentOf(u);
    for (const [name, bytes, mime, text] of [
      ['q3-report.pdf', makePdf('Revenue grew 12 percent in Q3'), 'application/pdf', 'Revenue grew 12 percent in Q3'],
      [
        'minutes.docx',
        await makeDocx('Decision: ship on Friday'),
        'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        'Decision: ship on Friday',
      ],
    ] as const) {
      const res = await upload(u, agent, bytes, name);
      expect(res.status).toBe(201);
      const file = (await res.json()) as { fileId: string };
      expect(file).toEqual({
        fileId: expect.stringMatching(/^file_/),
        filename: name,
        mimeType: mime,
        size: bytes.length,
        purpose: 'chat',
      });
      llm.enqueue({ content: 'Read it.' });
      const chat = await chatWith(u, agent, file.fileId, 'What does this say?');
      expect(chat.statusCode, chat.body).toBe(200);
      const sent = String(llm.requests.at(-1)?.messages.at(-1)?.content);
      expect(sent.trim()).toBe(`What does this say?\n\n[File: ${name}]\n${text}`);
    }
  });

  it('refuses a renamed executable (422) and a file over CHAT_FILE_MAX_BYTES (413)', async () => {
    const u = await createUser(h.app);
    const agent = await agentOf(u);
    const exe = await upload(u, agent, ELF_BYTES, 'invoice.pdf');
    expect(exe.status).toBe(422);
    expect(await exe.json()).toMatchObject({
      error: 'ValidationError',
      message: 'The file is not a PDF, DOCX, CSV, TXT, MD, PNG, JPG, GIF or WEBP file',
    });
    // A Windows executable (MZ header) named as a PDF is refused the same way, and nothing is stored.
    const mz = await upload(
      u,
      agent,
      Buffer.concat([Buffer.from('MZ\x90\x00\x03\x00', 'latin1'), Buffer.alloc(58)]),
      'invoice.pdf',
    );
    expect(mz.status).toBe(422);
    expect(((await mz.json()) as { message: string }).message).toBe(
      'The file is not a PDF, DOCX, CSV, TXT, MD, PNG, JPG, GIF or WEBP file',
    );
    expect(await h.database.db.select().from(chatFiles).where(eq(chatFiles.accountId, u.account.id))).toEqual([]);
    const big = await upload(u, agent, Buffer.from('x'.repeat(5000)), 'notes.txt', smallBase);
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({
      error: 'PayloadTooLargeError',
      message: 'The file is larger than CHAT_FILE_MAX_BYTES allows',
      statusCode: 413,
    });
    const none = await fetch(`${base}/agents/${agent}/chat/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${u.sessionToken}` },
      body: (() => {
        const f = new FormData();
        f.append('other', 'x');
        return f;
      })(),
    });
    expect(none.status).toBe(422);
    // A body that is not the multipart it claims (no part, a part cut short): 400, not 500, and nothing stored.
    for (const body of [
      '[]',
      '--x\r\n',
      '--x\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc',
    ]) {
      const bad = await fetch(`${base}/agents/${agent}/chat/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${u.sessionToken}`, 'content-type': 'multipart/form-data; boundary=x' },
        body,
      });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toEqual({
        error: 'BadRequestError',
        message: 'The multipart body could not be read: send the file as a part named "file"',
        statusCode: 400,
      });
    }
    expect(await h.database.db.select().from(chatFiles).where(eq(chatFiles.accountId, u.account.id))).toEqual([]);
  });

  it('refuses decompression bombs, crowded DOCX, long PDFs and CSVs with 413 naming the setting; memory stays flat', async () => {
    const u = await createUser(h.app);
    const agent = await agentOf(u);
    const tooBig = (message: string) => ({ error: 'PayloadTooLargeError', message, statusCode: 413 });
    const expands = tooBig('The DOCX expands to more than 52428800 bytes (DOCUMENT_MAX_EXPANDED_BYTES)');
    const pdfExpands = tooBig('The PDF expands to more than 52428800 bytes (DOCUMENT_MAX_EXPANDED_BYTES)');
    // 100 MB of text in about 150 KB; the liar's headers declare 1 KB for the same 100 MB; a PDF page of 100 MB.
    const bomb = await makeBombDocx(100 * 1024 * 1024);
    const liar = await makeBombDocx(100 * 1024 * 1024, 1024);
    const pdfBomb = await makeBombPdf(100 * 1024 * 1024);
    expect(bomb.length).toBeLessThan(200_000);
    // The parsers are loaded and the server warm before memory is measured.
    expect((await upload(u, agent, await makeDocx('warm'), 'warm.docx')).status).toBe(201);

    const answers: { status: number; body: unknown }[] = [];
    const bombs = [bomb, liar, pdfBomb, liar];
    const growth = await peakGrowth(() =>
      Promise.all(
        bombs.map(async (bytes, i) => {
          const res = await upload(u, agent, bytes, bytes === pdfBomb ? 'bomb.pdf' : `bomb${i}.docx`);
          answers[i] = { status: res.status, body: await res.json() };
        }),
      ),
    );
    // Four uploads of 100 MB each once inflated: the server's memory grows by tens of MB, not GBs (four
    // DOCX bombs took its RSS 2.0 GB higher at the peak before these bounds).
    expect(growth.rss).toBeLessThan(100 * 1024 * 1024);
    expect(growth.external).toBeLessThan(100 * 1024 * 1024);
    expect(growth.arrayBuffers).toBeLessThan(100 * 1024 * 1024);
    expect(answers).toEqual([expands, expands, pdfExpands, expands].map((body) => ({ status: 413, body })));

    const crowded = await upload(u, agent, await makeCrowdedDocx('x', 1001), 'crowded.docx');
    expect([crowded.status, await crowded.json()]).toEqual([
      413,
      tooBig('The DOCX holds more than 1000 files (DOCUMENT_MAX_ENTRIES)'),
    ]);
    const pdf = await upload(u, agent, makePdf('page', 501), 'long.pdf');
    expect([pdf.status, await pdf.json()]).toEqual([
      413,
      tooBig('The PDF has 501 pages, more than 500 (DOCUMENT_MAX_PDF_PAGES)'),
    ]);
    const rows = (n: number) => Buffer.from('id,name\n'.concat('1,x\n'.repeat(n - 1)));
    const csv = await upload(u, agent, rows(100_001), 'rows.csv');
    expect([csv.status, await csv.json()]).toEqual([
      413,
      tooBig('The CSV has more than 100000 rows (DOCUMENT_MAX_CSV_ROWS)'),
    ]);
    expect(await h.database.db.select().from(chatFiles).where(eq(chatFiles.accountId, u.account.id))).toHaveLength(1);
    // At the bounds, documents are read.
    expect((await upload(u, agent, rows(100_000), 'rows.csv')).status).toBe(201);
    expect((await upload(u, agent, await makeCrowdedDocx('x', 1000), 'crowded.docx')).status).toBe(201);
    expect((await upload(u, agent, makePdf('page', 3), 'short.pdf')).status).toBe(201);
  }, 120_000);

  it('an image needs a model with vision; another account cannot use the file', async () => {
    const u = await createUser(h.app);
    const agent = await agentOf(u);
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    const res = await upload(u, agent, png, 'chart.png');
    expect(res.status).toBe(201);
    const { fileId } = (await res.json()) as { fileId: string };
    const refused = await chatWith(u, agent, fileId, 'Describe the chart');
    expect(refused.statusCode).toBe(422);
    expect(refused.json().message).toBe('Model fake-model cannot read images: give the agent a model with vision');
    expect(llm.requests).toHaveLength(0);

    const other = await createUser(h.app);
    const theirs = await agentOf(other);
    const stolen = await chatWith(other, theirs, fileId, 'Describe it');
    expect(stolen.statusCode).toBe(404);
    expect(stolen.json().message).toBe(`Chat file ${fileId} not found`);
    const wrongAgent = await upload(other, agent, png, 'x.png');
    expect(wrongAgent.status).toBe(404);
  });

  it('an image reaches a model with vision as a data URI of its exact bytes', async () => {
    const u = await createUser(h.app);
    const agent = (
      await call(seeing, 'POST', '/api/v1/agents', {
        token: u.sessionToken,
        body: { name: 'Eyes', llm: 'fake-vision' },
      })
    ).json().id as string;
    // A whole 1x1 PNG: bytes whose base64 differs from any other reading of them.
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
      'base64',
    );
    const res = await upload(u, agent, png, 'pixel.dat', seeingBase);
    expect(res.status).toBe(201);
    const { fileId, mimeType } = (await res.json()) as { fileId: string; mimeType: string };
    expect(mimeType).toBe('image/png');
    llm.enqueue({ content: 'One white pixel.' });
    const answer = await call(seeing, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
      token: u.sessionToken,
      body: {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is in the picture?' },
              { type: 'file', file: { file_id: fileId } },
            ],
          },
        ],
      },
    });
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json().choices[0].message.content).toBe('One white pixel.');
    const sent = llm.requests.at(-1)?.messages.at(-1) as { role: string; content: unknown } | undefined;
    expect(sent?.role).toBe('user');
    expect(sent?.content).toEqual(
      expect.arrayContaining([
        { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
      ]),
    );
  });

  guardTests(
    () => h,
    [
      {
        method: 'POST',
        url: '/api/v1/agents/agt_x/chat/files',
        scopes: ['agents-all', 'agents-use'],
        multipart: [{ name: 'file', filename: 'a.txt', contentType: 'text/plain', content: 'hello' }],
        ownedUrl: async (o) => `/api/v1/agents/${await agentOf(o)}/chat/files`,
      },
    ],
  );
});
