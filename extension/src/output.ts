// One renderer for every flowlab output in JupyterLab (docs/notebook-outputs.md). It draws the saved payloads itself
// (no kernel, no widget state needed: a reopened notebook shows what the user saw), and where the output also carries
// a live widget (application/vnd.jupyter.widget-view+json) whose model the kernel still has, it hands the output over
// to that widget, which it hosts inside itself. The live plan browser tells it (a bubbling DOM event) which view it
// draws; the renderer writes that view into the output, so that saving the notebook keeps it.
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { Panel, Widget } from "@lumino/widgets";
import { h } from "./dom.js";
import { readPayload } from "./payload.js";
import { chosenMime, savedUpdate, savedViews, VIEW_EVENT, type ViewChange, WIDGET_MIME } from "./saved.js";
import { ensureStyle } from "./style.js";
import { type Rendered, renderParsed } from "./views.js";

/** Where the widget renderer comes from: the notebook's rendermime once ipywidgets' manager is bound to it. */
export interface WidgetHost {
  /** A widget renderer bound to a live widget manager now, or null while there is none (no kernel yet, or ever). */
  create(): IRenderMime.IRenderer | null;
  /** Resolves when create() may give one (the notebook's kernel session is ready), or false when none will come. */
  whenReady(): Promise<boolean>;
}

/** How long a live output waits for its widget's view before drawing the saved payload under it. A widget that
 * cannot show ends sooner (ipywidgets looks for a missing model for 2 s, then says so; a disconnected view or
 * "Loading widget..." is known at once), so this only bounds a slow view, e.g. a 10,000-task Plan's widget, whose
 * saved payload would otherwise be decoded and laid out for nothing beside it. */
export const WIDGET_GRACE_MS = 3000;

type Mode = "static" | "widget" | "waiting";
const DISCONNECTED = "jupyter-widgets-disconnected";

export class OutputRenderer extends Panel implements IRenderMime.IRenderer {
  private view: Rendered | null = null;
  private readonly saved = new Widget();
  private hosted: IRenderMime.IRenderer | null = null;
  private hostedId = "";
  private observer: MutationObserver | null = null;
  private model: IRenderMime.IMimeModel | null = null;
  private shownMime: string | null = null;
  private renders = 0;  // renderModel calls: a later one supersedes what an earlier one still waits for
  private draws = 0;  // saved views drawn: only the latest decode draws

  constructor(private readonly host: WidgetHost | null = null) {
    super();
    this.addClass("flowlab-mime");
    this.saved.addClass("flowlab-saved");
    this.addWidget(this.saved);
    this.node.addEventListener(VIEW_EVENT, (e) => this.onViewEvent(e as CustomEvent<ViewChange>));
  }

  /** "widget" while the live widget shows, "static" while the saved payload does (also the page's data-flowlab-mode). */
  get mode(): Mode { return (this.node.dataset.flowlabMode as Mode | undefined) ?? "waiting"; }
  private setMode(mode: Mode): void { this.node.dataset.flowlabMode = mode; }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.model = model;
    const widgetId = liveModelId(model);
    if (widgetId !== null && widgetId === this.hostedId && this.hosted !== null) {
      // the same live widget (the output's data changed: the view written back): keep it, and keep its view
      if (this.mode === "static") await this.drawSaved(model);
      return;
    }
    const call = ++this.renders;
    this.dropHosted();
    if (widgetId === null || this.host === null) return this.drawSaved(model);
    this.hostedId = widgetId;
    const now = this.host.create();
    if (now !== null) {
      // a kernel is live: give its widget a head start before drawing the saved view under it
      this.setMode("waiting");
      const shown = this.hostWidget(now, model);
      const first = await Promise.race([shown, delay(WIDGET_GRACE_MS).then(() => false)]);
      if (call === this.renders && !first && this.mode !== "widget") await this.drawSaved(model);
      return;
    }
    await this.drawSaved(model);
    void this.host.whenReady().then((ok) => {
      const later = ok && call === this.renders ? this.host?.create() ?? null : null;
      if (later !== null) void this.hostWidget(later, model);
    });
  }

  /** Render the widget hidden; show it (and drop the saved view) once it holds a connected view: ipywidgets'
   * renderer leaves only text ("Loading widget...", "Error displaying widget: model not found") when it has no view,
   * and marks a view `jupyter-widgets-disconnected` when its model has no kernel behind it (a model restored from
   * saved widget state beside a fresh kernel: drawn, but nothing it does reaches a kernel). */
  private async hostWidget(renderer: IRenderMime.IRenderer, model: IRenderMime.IMimeModel): Promise<boolean> {
    this.hosted = renderer;
    renderer.addClass("flowlab-live");
    renderer.hide();
    this.addWidget(renderer);
    const check = (): boolean => {
      if (renderer !== this.hosted) return false;
      const views = [...renderer.node.children];
      const live = views.length > 0 && !views.some((v) => v.classList.contains(DISCONNECTED));
      if (live && this.mode !== "widget") {
        this.clearSaved();
        renderer.show();
        this.setMode("widget");
      } else if (!live && this.mode === "widget") {
        // the widget closed (a kernel restart clears every model): the saved view comes back
        renderer.hide();
        if (this.model) void this.drawSaved(this.model);
      }
      return live;
    };
    this.observer = new MutationObserver(() => void check());
    // the view's own class says when its model connects or loses its kernel: watch the classes below, too
    this.observer.observe(renderer.node, { childList: true, subtree: true, attributes: true, attributeFilter: ["class"] });
    try {
      await renderer.renderModel(model);
    } catch (e) {
      console.warn("flowlab: the live widget could not be shown; drawing the saved view", e);
    }
    return check();
  }

  private dropHosted(): void {
    this.observer?.disconnect();
    this.observer = null;
    if (this.hosted !== null) this.hosted.dispose();
    this.hosted = null;
    this.hostedId = "";
  }

  private clearSaved(): void {
    this.view?.destroy();
    this.view = null;
    this.saved.node.replaceChildren();
    this.saved.hide();
  }

  /** Draw the saved payload the metadata names (else the Plan), with a switch where the output saved several. */
  private async drawSaved(model: IRenderMime.IMimeModel, mime?: string): Promise<void> {
    const call = ++this.draws;
    const data = model.data as Record<string, unknown>;
    const chosen = mime ?? chosenMime(data, model.metadata as Record<string, unknown>);
    const text = data["text/plain"];
    const parsed = chosen === null
      ? { ok: false as const, message: "this output holds no flowlab payload" }
      : await readPayload(data[chosen]);
    if (call !== this.draws) return;  // a newer model came while this one decoded: draw only the latest
    this.view?.destroy();
    this.saved.show();
    const el = this.saved.node;
    ensureStyle(el.ownerDocument);
    this.view = renderParsed(el, parsed, typeof text === "string" ? text : undefined, { tools: this.switch(model, chosen) });
    this.shownMime = chosen;
    this.setMode("static");
    if (this.view.graph) await this.view.graph.ready;
  }

  /** Buttons for the other saved views of this output (its jobs and its Plan), none where it saved one. */
  private switch(model: IRenderMime.IMimeModel, chosen: string | null): HTMLElement[] {
    const views = savedViews(model.data as Record<string, unknown>, model.metadata as Record<string, unknown>);
    if (views.length < 2) return [];
    const box = h("span", "fl-views");
    box.title = "the views this output saved";
    for (const [name, mime] of views) {
      const b = h("button", mime === chosen ? "fl-view-on" : "", name);
      b.type = "button";
      b.title = `show the saved ${name} view`;
      b.addEventListener("click", () => { if (mime !== this.shownMime) void this.drawSaved(model, mime); });
      box.append(b);
    }
    return [box];
  }

  /** The live plan browser drew a view: write it into the output, so the notebook saves what the user looks at. */
  private onViewEvent(e: CustomEvent<ViewChange>): void {
    const model = this.model;
    if (!model || !e.detail || typeof e.detail.view !== "string") return;
    const update = savedUpdate(model.data as Record<string, unknown>, model.metadata as Record<string, unknown>, e.detail);
    if (update !== null) model.setData(update as IRenderMime.IMimeModel.ISetDataOptions);
  }

  protected onBeforeDetach(): void { this.view?.destroy(); }

  dispose(): void {
    this.observer?.disconnect();
    this.view?.destroy();
    super.dispose();
  }
}

function liveModelId(model: IRenderMime.IMimeModel): string | null {
  if (!model.trusted) return null;  // an untrusted output never runs a widget's code
  const ref = model.data[WIDGET_MIME] as { model_id?: unknown } | undefined;
  return typeof ref?.model_id === "string" && ref.model_id ? ref.model_id : null;
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
