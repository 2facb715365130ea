// Hand-made payloads (payload.md v1) for the tests, the browser harness and the layout benchmark.
import type { Act, Detail, GEdge, GGroup, GNode, Graph, JobsetPayload, Memory, PlanPayload, RunPayload } from "./payload.js";

export const XSS = "<img src=x onerror=alert(1)>";

function detail(title: string, rows: [string, string][]): Detail {
  return { title, sections: [{ title: "op", rows }, { title: "blobs", rows: [["out", "f32[100,512]"]] }] };
}

/** The jobs of a 30-layer MLP train session: user job grouped by layer (fc0..fc29), push/pull through a memblock. */
export function mlpJobset(layers = 30): JobsetPayload {
  const groups: GGroup[] = [], nodes: GNode[] = [], edges: GEdge[] = [], details: Record<string, Detail> = {};
  const jobs = ["push_job (push)", "train_job (user)", "pull_job (pull)", "System-Main (main)"];
  jobs.forEach((j, i) => groups.push({ id: `g:job:${i}`, label: j, parent: null, kind: "job", collapsed: false }));
  const add = (id: string, label: string, parent: string | null, kind: GNode["kind"], type: string): void => {
    nodes.push({ id, label, kind, parent, type, detail: `d:${id}` });
    details[`d:${id}`] = detail(label, [["op_type", type], ["loc", "mlp.py:12"]]);
  };
  let eid = 0;
  const edge = (s: string, t: string, label: string, kind: GEdge["kind"] = "data"): void => { edges.push({ id: `e:${eid++}`, source: s, target: t, kind, label }); };
  add("o:push:in", "Input_0", "g:job:0", "interface", "input");
  add("m:0", "mem block 0", null, "memblock", "host 200 KB");
  add("o:in", "Input_0", "g:job:1", "interface", "input");
  edge("o:push:in", "m:0", "shared", "shared_mem");
  edge("m:0", "o:in", "shared", "shared_mem");
  let prev = "o:in";
  for (let l = 0; l < layers; l++) {
    const gid = `g:job:1/fc${l}`;
    groups.push({ id: gid, label: `fc${l}`, parent: "g:job:1", kind: "scope", collapsed: true });
    const ops = ["matmul", "bias_add", "relu", "matmul_grad", "bias_grad", "relu_grad", "sgd_w"];
    ops.forEach((o, k) => add(`o:fc${l}-${o}`, `fc${l}-${o}`, gid, "op", o));
    for (let k = 0; k < 3; k++) edge(k === 0 ? prev : `o:fc${l}-${ops[k - 1]}`, `o:fc${l}-${ops[k]}`, "f32[100,512]");
    edge(`o:fc${l}-relu`, `o:fc${l}-relu_grad`, "f32[100,512]");
    edge(`o:fc${l}-relu_grad`, `o:fc${l}-bias_grad`, "f32[100,512]");
    edge(`o:fc${l}-bias_grad`, `o:fc${l}-matmul_grad`, "f32[512]");
    edge(`o:fc${l}-matmul_grad`, `o:fc${l}-sgd_w`, "f32[512,512]");
    prev = `o:fc${l}-relu`;
  }
  add("o:loss", "loss", "g:job:1", "op", "reduce_mean");
  add("o:xss", XSS, "g:job:1", "op", XSS);
  edge(prev, "o:loss", "f32[100]");
  edge("o:loss", "o:xss", XSS);
  add("o:out", "Return_0", "g:job:1", "interface", "return");
  edge("o:loss", "o:out", "f32[]");
  add("m:1", "mem block 1", null, "memblock", "host 4 B");
  add("o:pull:out", "Return_0", "g:job:2", "interface", "output");
  edge("o:out", "m:1", "shared", "shared_mem");
  edge("m:1", "o:pull:out", "shared", "shared_mem");
  add("o:main:tick", "Tick_CriticalSection_0", "g:job:3", "op", "tick");
  edge("o:main:tick", "o:in", "", "ctrl");
  const graph: Graph = { nodes, groups, edges, lanes: [], details };
  return { flowlab_payload: 1, kind: "jobset", title: `${layers}-layer MLP train (jobset)`, graph,
    shared_interfaces: { Input_0: ["push_job", "train_job"], Return_0: ["train_job", "pull_job"] } };
}

/** A synthetic Plan of `tasks` tasks: jobs of layers of tasks, every job and layer starting collapsed, two lanes. */
export function bigPlan(tasks = 10_000, jobs = 10, layers = 25): PlanPayload {
  const groups: GGroup[] = [], nodes: GNode[] = [], edges: GEdge[] = [], details: Record<string, Detail> = {};
  const lanes = ["machine 0 / thread 0", "machine 0 / thread 1"];
  const perJob = Math.ceil(tasks / jobs), perLayer = Math.ceil(perJob / layers);
  let n = 0, eid = 0, prevJobLast: string | null = null;
  for (let j = 0; j < jobs && n < tasks; j++) {
    const jid = `g:job:${j}`;
    groups.push({ id: jid, label: `job_${j} (user)`, parent: null, kind: "job", collapsed: true });
    let prevLayer: string[] = [];
    for (let l = 0; l < layers && n < tasks; l++) {
      const lid = `${jid}/layer${l}`;
      groups.push({ id: lid, label: `layer${l}`, parent: jid, kind: "scope", collapsed: true });
      const cur: string[] = [];
      for (let k = 0; k < perLayer && n < tasks; k++, n++) {
        const id = `t:${n}`;
        nodes.push({ id, label: `layer${l}-op${k}`, kind: "task", parent: lid, type: "NormalForward", lane: lanes[n % 2], detail: `d:${id}` });
        details[`d:${id}`] = detail(`task ${n}`, [["op", `layer${l}-op${k}`], ["thread", lanes[n % 2]]]);
        const src = prevLayer.length ? prevLayer[k % prevLayer.length] : prevJobLast;
        if (src) edges.push({ id: `e:${eid++}`, source: src, target: id, kind: "data", label: "f32[64,64]" });
        cur.push(id);
      }
      prevLayer = cur;
    }
    prevJobLast = prevLayer[0] ?? prevJobLast;
  }
  return { flowlab_payload: 1, kind: "plan", title: `synthetic Plan (${n} tasks)`, summary: { tasks: n, regsts: n, mem_blocks: jobs },
    graph: { nodes, groups, edges, lanes, details } };
}

/** A small Plan of two jobs and its recorded run: each act writes one register that lives until two acts later. */
export function smallRun(): RunPayload {
  const groups: GGroup[] = [
    { id: "g:job:0", label: "pad_Job (user)", parent: null, kind: "job", collapsed: false },
    { id: "g:job:1", label: "System-Main (main)", parent: null, kind: "job", collapsed: false },
  ];
  const names = ["Input_0", "reflection_pad2d_0", "conv_0", "relu_0", XSS, "Return_0"];
  const nodes: GNode[] = names.map((nm, i) => ({ id: `t:${i}`, label: nm, kind: "task", parent: "g:job:0", type: "NormalForward",
    lane: i % 2 ? "machine 0 / thread 1" : "machine 0 / thread 0", detail: `d:t:${i}` }));
  nodes.push({ id: "t:main", label: "Tick_CriticalSection_0", kind: "task", parent: "g:job:1", type: "Tick" });
  const edges: GEdge[] = names.slice(1).map((_, i) => ({ id: `e:${i}`, source: `t:${i}`, target: `t:${i + 1}`, kind: "data", label: `f32[2,${i + 1}]` }));
  edges.push({ id: "e:ctrl", source: "t:main", target: "t:0", kind: "ctrl", label: "" });
  const details: Record<string, Detail> = {};
  names.forEach((nm, i) => { details[`d:t:${i}`] = detail(nm, [["op_type", i === 4 ? XSS : "conv"], ["register", `r:${i}`]]); });
  const acts: Act[] = names.map((nm, i) => ({ index: i, node: `t:${i}`, actor: nm, job: "pad_Job", reads: i ? [`r:${i - 1}`] : [],
    writes: [`r:${i}`], blobs: { [`r:${i}`]: { shape: [2, i + 1], dtype: "f32", min: -1, max: i, mean: 0.5, nan: i === 3 ? 2 : 0, inf: 0 } },
    // the kernel tier as a tiered run records it: the reference kernel first, Numba's once compiled; the last act no kernel
    ...(i < names.length - 1 ? { tier: i < 2 ? "reference" : "numba" } : {}) }));
  const memory: Memory = {
    blocks: [{ id: "b:0", size: 4096, mem_case: "host" }, { id: "b:1", size: 1024, mem_case: "host" }],
    lifetimes: names.map((_, i) => ({ regst: `r:${i}`, block: `b:${i % 2}`, offset: (i >> 1) * 256, size: 256, first_act: i, last_act: Math.min(names.length - 1, i + 2) })),
  };
  return { flowlab_payload: 1, kind: "run", title: "pad_Job run (6 acts)", graph: { nodes, groups, edges, lanes: ["machine 0 / thread 0", "machine 0 / thread 1"], details }, acts, memory };
}
