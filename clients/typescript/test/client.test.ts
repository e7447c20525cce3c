/**
 * NousClient against a real `nous serve` on loopback (see server.ts for the store: SQLite, or a
 * scratch PostgreSQL schema with NOUS_TS_TEST_POSTGRES), and the README's example run as written.
 */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import {
  AuthenticationError,
  ConflictError,
  ConnectionError,
  InvalidInputError,
  NotFoundError,
  NousClient,
  NousError,
  type RecallOptions,
} from "../src/index.js";
import { PACKAGE, REPO, startServer, type LiveServer } from "./server.js";

const run = promisify(execFile);

let server: LiveServer;
let nous: NousClient;

before(async () => {
  server = await startServer();
  nous = new NousClient(server.url, { key: server.key });
});

after(async () => {
  await server?.stop();
});

describe("NousClient", () => {
  test("health names the backend under test", async () => {
    const health = await nous.health();
    assert.equal(health.status, "ok");
    assert.equal(health.backend, server.backend);
  });

  test("learn, then recall finds it, get reads it, forget hides it", async () => {
    const created = await nous.learn("The staging database is backed up every night at 02:00 UTC.", {
      subject: "staging",
      tags: ["ops"],
    });
    assert.equal(created.status, "created");
    assert.equal(created.type, "fact");

    const { results } = await nous.recall("When is the staging database backed up?", { limit: 5 });
    assert.equal(results[0]?.id, created.id);
    assert.match(results[0]?.content ?? "", /02:00 UTC/);

    const memory = await nous.get(created.id);
    assert.equal(memory.id, created.id);
    assert.equal(memory.type, "fact");

    await nous.forget(created.id);
    const after = await nous.recall("When is the staging database backed up?", { limit: 5 });
    assert.ok(!after.results.some((r) => r.id === created.id));
    const withForgotten = await nous.recall("When is the staging database backed up?", {
      limit: 5,
      include_inactive: true,
    });
    assert.ok(withForgotten.results.some((r) => r.id === created.id));
  });

  test("memories pages with a cursor; allMemories follows it", async () => {
    const ids = new Set<string>();
    for (const city of ["Lisbon", "Oslo", "Quito"]) {
      ids.add((await nous.learn(`The paging team's offsite is in ${city}.`, { subject: "paging", dedup: false })).id);
    }
    const first = await nous.memories({ subject: "paging", limit: 2, type: ["fact"] });
    assert.equal(first.items.length, 2);
    assert.ok(first.next_cursor);
    const second = await nous.memories({ subject: "paging", limit: 2, cursor: first.next_cursor });
    assert.equal(second.items.length, 1);
    assert.equal(second.next_cursor ?? null, null);
    const seen = [...first.items, ...second.items].map((m) => m.id);
    assert.deepEqual(new Set(seen), ids);

    const all: string[] = [];
    for await (const memory of nous.allMemories({ subject: "paging", limit: 1 })) all.push(String(memory.id));
    assert.deepEqual(all, seen);
  });

  test("the turn loop: preTurn, postTurn, endSession; an ended session takes no turn", async () => {
    await nous.learn("Invoices for the Acme account are sent on the 1st of each month.", { subject: "acme" });
    const turn = await nous.preTurn("ts-session", "When do Acme's invoices go out?", { budget: 4000 });
    assert.equal(turn.session_id, "ts-session");
    assert.equal(turn.turn, 1);
    assert.match(turn.context, /1st of each month/);

    const state = await nous.postTurn("ts-session", "They are sent on the 1st of each month.", {
      tools_used: ["recall"],
    });
    assert.equal(state.turn_count, 1);
    assert.deepEqual(state.tools_used, ["recall"]);

    const ended = await nous.endSession("ts-session");
    assert.equal(ended.ended_now, true);
    assert.ok(ended.session.ended_at);

    const refused = await nous.preTurn("ts-session", "One more thing?").catch((e: unknown) => e);
    assert.ok(refused instanceof ConflictError, String(refused));
    assert.equal(refused.status, 409);
  });

  test("a missing memory is a NotFoundError with the problem's fields", async () => {
    const error = await nous.get("no-such-memory").catch((e: unknown) => e);
    assert.ok(error instanceof NotFoundError, String(error));
    assert.ok(error instanceof NousError);
    assert.equal(error.status, 404);
    assert.equal(error.code, "not_found");
    assert.ok(error.detail.length > 0);
    assert.match(error.requestId ?? "", /\S/);
  });

  test("an invalid field is an InvalidInputError naming the field", async () => {
    const error = await nous.recall("anything", { limit: 0 }).catch((e: unknown) => e);
    assert.ok(error instanceof InvalidInputError, String(error));
    assert.equal(error.status, 422);
    assert.equal(error.code, "invalid_input");
    assert.equal(error.field, "limit");
    assert.match(error.requestId ?? "", /\S/);

    // A field the API does not take is refused, not ignored.
    const unknown = await nous
      .recall("anything", { limt: 3 } as unknown as RecallOptions)
      .catch((e: unknown) => e);
    assert.ok(unknown instanceof InvalidInputError, String(unknown));
    assert.equal(unknown.field, "limt");
  });

  test("a wrong key is an AuthenticationError; an unreachable server a ConnectionError", async () => {
    const stranger = new NousClient(server.url, { key: "nous_000000000000_wrong" });
    const error = await stranger.recall("anything").catch((e: unknown) => e);
    assert.ok(error instanceof AuthenticationError, String(error));
    assert.equal(error.status, 401);

    const nowhere = new NousClient("http://127.0.0.1:9", { retries: 0 });
    const down = await nowhere.health().catch((e: unknown) => e);
    assert.ok(down instanceof ConnectionError, String(down));
    assert.equal(down.status, 0);
  });

  test("request reaches any route: JSON answers parsed, text answers as text; an abort propagates", async () => {
    const stats = (await nous.request("GET", "/v1/stats")) as { active_by_kind: Record<string, number> };
    assert.ok((stats.active_by_kind.fact ?? 0) >= 1);
    const exported = await nous.request("GET", "/v1/export");
    assert.equal(typeof exported, "string");
    const lines = (exported as string).trim().split("\n").map((line) => JSON.parse(line) as { type?: string });
    assert.ok(lines.length >= 1);

    await assert.rejects(nous.recall("anything", { signal: AbortSignal.abort() }), { name: "AbortError" });
  });

  test("the same Idempotency-Key answers the first answer again; another body is refused", async () => {
    const text = "The release train leaves every second Tuesday.";
    const first = await nous.learn(text, { dedup: false, idempotencyKey: "ts-release-train" });
    const again = await nous.learn(text, { dedup: false, idempotencyKey: "ts-release-train" });
    assert.equal(again.id, first.id);
    const fresh = await nous.learn(text, { dedup: false }); // a fresh key: stored again
    assert.notEqual(fresh.id, first.id);

    const reused = await nous
      .learn("Something else entirely.", { idempotencyKey: "ts-release-train" })
      .catch((e: unknown) => e);
    assert.ok(reused instanceof InvalidInputError, String(reused));
    assert.equal(reused.code, "idempotency_key_reused");
  });

  test("a creating POST whose answer is lost is sent again with its key and stored once", async () => {
    const keys: string[] = [];
    let lose = true;
    const flaky: typeof fetch = async (input, init) => {
      keys.push(new Headers(init?.headers).get("Idempotency-Key") ?? "");
      const response = await fetch(input, init);
      if (lose) {
        lose = false;
        await response.arrayBuffer();
        throw new TypeError("fetch failed: connection reset"); // the server acted; the answer is lost
      }
      return response;
    };
    const client = new NousClient(server.url, { key: server.key, fetch: flaky });
    const created = await client.learn("The canary stage runs for forty minutes.", {
      subject: "canary",
      dedup: false,
    });
    assert.equal(keys.length, 2);
    assert.match(keys[0] ?? "", /\S/);
    assert.equal(keys[1], keys[0]);
    const stored = await nous.memories({ subject: "canary" });
    assert.deepEqual(
      stored.items.map((m) => m.id),
      [created.id],
    );
  });

  test("recordDecision and checkAction", async () => {
    const decision = await nous.recordDecision("Adopt PostgreSQL for the billing service.", {
      confidence: 0.8,
      stakes: "high",
      reasons: [{ type: "analysis", text: "It carries the transactional load we measured." }],
    });
    assert.equal(decision.type, "decision");
    assert.ok(decision.id);
    assert.equal((await nous.get(decision.id)).id, decision.id);

    await nous.createMemory({ type: "censor", content: "DROP\\s+TABLE", action: "block", reason: "production" });
    const verdict = await nous.checkAction("DROP TABLE invoices");
    assert.equal(verdict.decision, "block");
    assert.equal((await nous.checkAction("SELECT 1")).decision, "allow");
  });

  test("ingest: within the request, and as a job polled to its end", async () => {
    const conversation = (id: string) => ({
      id,
      sessions: [
        {
          id: "s1",
          started_at: "2026-03-01T10:00:00Z",
          messages: [
            { id: "m1", role: "user", content: `In ${id} we agreed the warehouse moves to Porto.` },
            { id: "m2", role: "assistant", content: "Noted: the warehouse moves to Porto." },
          ],
        },
      ],
    });
    const report = await nous.ingest(conversation("chat-wait"), { wait: true });
    assert.ok(report);

    const job = await nous.ingest(conversation("chat-job"));
    assert.match(job.id, /\S/);
    let current = await nous.job(job.id);
    const deadline = Date.now() + 120_000;
    while (current.status !== "done" && current.status !== "dead" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      current = await nous.job(job.id);
    }
    assert.equal(current.status, "done");
  });
  test("threads: up to limit, and one thread's members in time order", async () => {
    const turns = [
      "We set up the Postgres replica for the billing database today.",
      "The billing database replica lags by two seconds under load.",
      "Next we moved the billing database backups to the new bucket.",
      "My sourdough starter finally doubled overnight.",
      "The sourdough loaf came out dense; the starter needs longer.",
      "I fed the sourdough starter twice today and it smells right.",
    ];
    for (const [i, content] of turns.entries()) {
      // dedup off: this test is about threads, not about which progress reports are duplicates
      await nous.learn(content, { occurred_at: `2026-03-0${i + 1}T10:00:00Z`, dedup: false });
    }
    // no worker builds threads in this test's time: the CLI's upkeep does, on the same store
    await run(join(REPO, ".venv", "bin", "nous"), ["--agent", "ts-client", "maintain"], { env: server.env });

    const all = await nous.threads();
    assert.ok(all.length >= 2, `expected two topics, got ${all.length} threads`);
    const one = await nous.threads({ limit: 1 });
    assert.equal(one.length, 1);
    assert.equal(one[0]?.id, all[0]?.id);

    const best = await nous.threads({ query: "sourdough starter", limit: 1 });
    const thread = await nous.thread(best[0]?.id ?? "");
    const members = thread.members ?? [];
    assert.ok(members.length >= 2);
    assert.ok(members.every((m) => /sourdough/i.test(m.content ?? "")), JSON.stringify(members));
    const times = members.map((m) => m.occurred_at ?? "");
    assert.deepEqual(times, [...times].sort());
  });
});

describe("the README's example", () => {
  test("is examples/quickstart.ts, word for word, in both READMEs", async () => {
    const example = await readFile(join(PACKAGE, "examples", "quickstart.ts"), "utf8");
    for (const path of [join(PACKAGE, "README.md"), join(REPO, "README.md")]) {
      const readme = await readFile(path, "utf8");
      const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
      assert.deepEqual(blocks, [example], path);
    }
  });

  test("runs against the server", async () => {
    const { stdout } = await run(process.execPath, [join(PACKAGE, "dist", "examples", "quickstart.js")], {
      env: { ...process.env, NOUS_URL: server.url, NOUS_KEY: server.key },
    });
    assert.deepEqual(stdout.trim().split("\n"), [
      "recalled: The customer's cluster runs in Frankfurt (eu-central-1).",
      "context for the model: true",
      "session ended: true",
      "not found: 404 not_found",
    ]);
  });
});
