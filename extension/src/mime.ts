// The JupyterLab 4 mime renderer: a saved notebook's flowlab outputs draw without a kernel.
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { Widget } from "@lumino/widgets";
import { MIME_TYPES, readPayload } from "./payload.js";
import { type Rendered, renderParsed } from "./views.js";

class FlowlabRenderer extends Widget implements IRenderMime.IRenderer {
  private view: Rendered | null = null;
  private calls = 0;

  constructor(private readonly mimeType: string) {
    super();
    this.addClass("flowlab-mime");
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const call = ++this.calls;
    const text = model.data["text/plain"];
    // a saved notebook stores version 2 (gzipped): decoding is asynchronous in a browser
    const parsed = await readPayload(model.data[this.mimeType]);
    if (call !== this.calls) return;  // a newer model came while this one decoded: draw only the latest
    this.view?.destroy();
    this.view = renderParsed(this.node, parsed, typeof text === "string" ? text : undefined);
    if (this.view.graph) await this.view.graph.ready;
  }

  protected onBeforeDetach(): void { this.view?.destroy(); }
}

const mimeTypes = Object.values(MIME_TYPES);

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,  // nothing from the payload is ever inserted as HTML
  mimeTypes,
  defaultRank: 50,
  createRenderer: (options) => new FlowlabRenderer(options.mimeType),
};

const extension: IRenderMime.IExtension = {
  id: "flowlab:mime",
  rendererFactory,
  rank: 50,
  dataType: "json",
  fileTypes: [],
  documentWidgetFactoryOptions: [],
};

export default extension;
