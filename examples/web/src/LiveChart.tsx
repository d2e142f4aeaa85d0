import { useEffect, useRef, useState } from "react";

/**
 * The agent's statechart, as the handler draws it (`GET /agents/:name/chart`, the run viewer's
 * SVG), marked live: the active states get `current`, every state the run has entered `visited`
 * with its count in `data-visits`, as in the viewer.
 */
export function LiveChart({ url, agent, runId, path }: { url: string; agent: string; runId: string | undefined; path: string | undefined }) {
  const [html, setHtml] = useState<string>();
  const [problem, setProblem] = useState<string>();
  const box = useRef<HTMLDivElement>(null);
  const visits = useRef(new Map<string, number>());
  const active = useRef(new Set<string>());

  useEffect(() => {
    let live = true;
    fetch(`${url}/agents/${encodeURIComponent(agent)}/chart`)
      .then((response) => (response.ok ? response.text() : Promise.reject(new Error(`HTTP ${response.status}`))))
      .then((text) => live && setHtml(text))
      .catch((error: unknown) => live && setProblem(String(error)));
    return () => {
      live = false;
    };
  }, [url, agent]);

  // A new run starts with a clean chart.
  useEffect(() => {
    visits.current = new Map();
    active.current = new Set();
  }, [runId]);

  useEffect(() => {
    const svg = box.current?.querySelector("svg");
    if (!svg || path === undefined) return;
    const root = svg.querySelector("[data-state]")?.getAttribute("data-state") ?? "";
    const parts = path.split(".");
    const now = new Set([root, ...parts.map((_, i) => `${root}.${parts.slice(0, i + 1).join(".")}`)]);
    for (const id of now) if (!active.current.has(id)) visits.current.set(id, (visits.current.get(id) ?? 0) + 1);
    active.current = now;
    for (const state of svg.querySelectorAll<SVGGElement>("[data-state]")) {
      const id = state.getAttribute("data-state")!;
      const count = visits.current.get(id) ?? 0;
      state.classList.toggle("current", now.has(id));
      state.classList.toggle("visited", count > 0);
      state.classList.toggle("idle", count === 0);
      state.setAttribute("data-visits", String(count));
    }
  }, [path, html, runId]);

  if (problem) return <div className="problem">The chart could not be loaded: {problem}</div>;
  return <div className="live-chart" data-testid="statechart" data-path={path ?? ""} ref={box} dangerouslySetInnerHTML={{ __html: html ?? "" }} />;
}
