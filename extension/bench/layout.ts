// dagre vs ELK (layered) on what the views lay out: the visible graph of the synthetic 10,000-task Plan and of the
// 30-layer MLP jobset, first view and after expanding a job. Run: npm run bench:layout
import ELK from "elkjs/lib/elk.bundled.js";
import { bigPlan, mlpJobset } from "../src/fixtures.js";
import { layoutSync } from "../src/layout.js";
import { GroupTree, type Visible } from "../src/visible.js";

async function elkLayout(v: Visible): Promise<number> {
  const elk = new ELK();
  const t0 = performance.now();
  type N = { id: string; width?: number; height?: number; children?: N[] };
  const byId = new Map<string, N>(), roots: N[] = [];
  for (const c of v.clusters) byId.set(c.id, { id: c.id, children: [] });
  for (const c of v.clusters) (c.parent ? byId.get(c.parent)!.children! : roots).push(byId.get(c.id)!);
  for (const n of v.nodes) (n.parent && byId.has(n.parent) ? byId.get(n.parent)!.children! : roots).push({ id: n.id, width: 120, height: 34 });
  await elk.layout({ id: "root", layoutOptions: { "elk.algorithm": "layered", "elk.direction": "DOWN", "elk.hierarchyHandling": "INCLUDE_CHILDREN" },
    children: roots, edges: v.edges.map((e) => ({ id: e.id, sources: [e.source], targets: [e.target] })) } as never);
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const cases: [string, GroupTree][] = [];
  const plan = new GroupTree(bigPlan().graph);
  cases.push(["10k plan, first view", plan]);
  const planJob = new GroupTree(bigPlan().graph);
  planJob.toggle("g:job:0");
  cases.push(["10k plan, job_0 expanded", planJob]);
  const planLayer = new GroupTree(bigPlan().graph);
  planLayer.toggle("g:job:0"); planLayer.toggle("g:job:0/layer0"); planLayer.toggle("g:job:0/layer1");
  cases.push(["10k plan, job_0 + 2 layers", planLayer]);
  const mlp = new GroupTree(mlpJobset().graph);
  cases.push(["30-layer MLP jobset", mlp]);
  const mlpOpen = new GroupTree(mlpJobset().graph);
  for (let l = 0; l < 30; l++) mlpOpen.toggle(`g:job:1/fc${l}`);
  cases.push(["30-layer MLP, all layers open", mlpOpen]);
  for (const [name, tree] of cases) {
    const v = tree.visible();
    layoutSync(v); // warm
    const d = Math.min(...[0, 1, 2].map(() => layoutSync(v).ms));
    await elkLayout(v);
    const e: number[] = [];
    for (let i = 0; i < 3; i++) e.push(await elkLayout(v));
    console.log(`${name.padEnd(32)} ${String(v.nodes.length).padStart(4)} boxes ${String(v.edges.length).padStart(4)} edges  dagre ${d.toFixed(1).padStart(7)} ms  elk ${Math.min(...e).toFixed(1).padStart(7)} ms`);
  }
}
void main();
