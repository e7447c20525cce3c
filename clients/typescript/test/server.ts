/**
 * A real `nous serve` on a free loopback port for the tests, over a fresh store: an SQLite file in
 * a temporary NOUS_HOME, or, with NOUS_TS_TEST_POSTGRES set to a PostgreSQL URL, a scratch schema
 * in that database (dropped afterwards with psql). The server is `$NOUS_BIN serve` (default: the
 * repository's `.venv/bin/nous`).
 */

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The repository's root (this file is compiled to clients/typescript/dist/test/). */
export const REPO = fileURLToPath(new URL("../../../../", import.meta.url));
/** clients/typescript. */
export const PACKAGE = fileURLToPath(new URL("../../", import.meta.url));

export interface LiveServer {
  url: string;
  key: string;
  backend: "sqlite" | "postgres";
  env: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

function nousBin(): string {
  return process.env.NOUS_BIN ?? join(REPO, ".venv", "bin", "nous");
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

async function healthy(url: string, proc: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`nous serve exited with ${proc.exitCode}:\n${log()}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`nous serve did not become healthy within 180 s:\n${log()}`);
}

/** Start `nous serve` over a fresh store and create an agent's key for it. */
export async function startServer(agent = "ts-client"): Promise<LiveServer> {
  const home = await mkdtemp(join(tmpdir(), "nous-ts-"));
  const postgres = process.env.NOUS_TS_TEST_POSTGRES;
  const schema = `ts_${randomBytes(4).toString("hex")}`;
  // The server's settings are the test's alone: none of the caller's NOUS_ variables.
  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("NOUS_")),
  );
  env.NOUS_HOME = home;
  env.NOUS_EVENT_POLL_SECONDS = "0.05"; // an ingest job starts soon after it is accepted
  if (postgres) env.NOUS_DATABASE_URL = `${postgres}${postgres.includes("?") ? "&" : "?"}nous_schema=${schema}`;
  const { stdout } = await run(nousBin(), ["keys", "create", "--agent", agent], { env });
  const key = stdout.trim().split("\n").at(-1) ?? "";
  if (!key.startsWith("nous_")) throw new Error(`nous keys create printed no key:\n${stdout}`);

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = spawn(nousBin(), ["serve", "--host", "127.0.0.1", "--port", String(port)], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  proc.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-20_000);
  });
  const stop = async (): Promise<void> => {
    if (proc.exitCode === null) {
      const exited = new Promise((resolve) => proc.once("exit", resolve));
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    }
    if (postgres) {
      const base = postgres.split("?")[0] ?? postgres;
      await run("psql", [base, "-q", "-c", `DROP SCHEMA IF EXISTS ${schema} CASCADE`]);
    }
    await rm(home, { recursive: true, force: true });
  };
  try {
    await healthy(url, proc, () => stderr);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, key, backend: postgres ? "postgres" : "sqlite", env, stop };
}
