/*
 * The peers' figures, quoted from issue 19's table ("Where we stand"). They were measured side by
 * side in the issue's own harness, as ratios to a hand-written loop on the openai SDK (import
 * figures absolute), on another day and machine: they are not re-measured here. The bench's table
 * shows the best of them next to each measure, so that "ahead of every peer" can be read off it;
 * comparing a ratio from this run with one from that harness is only as good as the two floors are
 * alike (both are the same minimal SDK loop).
 */

export const PEER_SOURCE = "best peer, measured in the issue's harness";

/** Lower is better unless `higherIsBetter`. `unit` is how the figure is printed. */
export const PEERS = {
  latencyWholeWall: { unit: "×", figures: { "Vercel AI SDK": 1.61, "OpenAI Agents SDK": 2.36, LangGraph: 3.71 } },
  latencyWholeCpu: { unit: "×", figures: { "Vercel AI SDK": 1.72, "OpenAI Agents SDK": 2.61, LangGraph: 3.94 } },
  latencyStreamWall: { unit: "×", figures: { "Vercel AI SDK": 3.19, "OpenAI Agents SDK": 2.54, LangGraph: 4.83 } },
  throughputWhole: { unit: "×", higherIsBetter: true, figures: { "Vercel AI SDK": 0.63, "OpenAI Agents SDK": 0.45, LangGraph: 0.25 } },
  throughputStream: { unit: "×", higherIsBetter: true, figures: { "Vercel AI SDK": 0.34, "OpenAI Agents SDK": 0.41, LangGraph: 0.22 } },
  heapPerAgent: { unit: "×", figures: { "Vercel AI SDK": 2.24, "OpenAI Agents SDK": 2.08, LangGraph: 2.6 } },
  importMs: { unit: " ms", figures: { "Vercel AI SDK": 169, "OpenAI Agents SDK": 480, LangGraph: 545 } },
  importHeapMB: { unit: " MB", figures: { "Vercel AI SDK": 7.2, "OpenAI Agents SDK": 15.0, LangGraph: 14.8 } },
};

/** The best peer on a measure: `{ name, figure, text, higherIsBetter }`. */
export function bestPeer(key) {
  const peer = PEERS[key];
  if (!peer) throw new Error(`no peer figures for ${JSON.stringify(key)}; known: ${Object.keys(PEERS).join(", ")}`);
  const [name, figure] = Object.entries(peer.figures).sort((a, b) => (peer.higherIsBetter ? b[1] - a[1] : a[1] - b[1]))[0];
  const text = peer.unit === "×" ? `${figure.toFixed(2)}×` : `${figure}${peer.unit}`;
  return { name, figure, text: `${name}: ${text}`, higherIsBetter: peer.higherIsBetter === true };
}

/** "ahead" when jianmu's figure beats the peer's, "level" when equal, "behind" otherwise. */
export function versus(peer, figure) {
  if (figure === peer.figure) return "level";
  return peer.higherIsBetter === figure > peer.figure ? "ahead" : "behind";
}
