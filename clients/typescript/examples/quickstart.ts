import { NousClient, NotFoundError } from "@nous/client";

// The server's URL and an agent's key: `nous keys create --agent support-bot`, then `nous serve`.
const nous = new NousClient(process.env.NOUS_URL ?? "http://127.0.0.1:8765", {
  key: process.env.NOUS_KEY,
});

// Remember a fact, then find it again.
await nous.learn("The customer's cluster runs in Frankfurt (eu-central-1).", { subject: "customer" });
const { results } = await nous.recall("Where is the customer's cluster?", { limit: 3 });
console.log("recalled:", results[0]?.content);

// The turn loop: the context before the model answers, its reply after, then the session's end.
const turn = await nous.preTurn("chat-42", "Can we move the cluster to a cheaper region?");
console.log("context for the model:", turn.context.length > 0);
await nous.postTurn("chat-42", "Moving is possible; Frankfurt was chosen for data residency.");
const { session } = await nous.endSession("chat-42");
console.log("session ended:", session.ended_at !== null);

// Errors are typed, with the problem's status, code, field and request id.
try {
  await nous.get("no-such-memory");
} catch (error) {
  if (!(error instanceof NotFoundError)) throw error;
  console.log("not found:", error.status, error.code);
}
