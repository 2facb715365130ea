// WCAG contrast of text against what is drawn behind it; see harness.least_contrast.
(selectors) => {
  const rgb = (c) => { const m = c.match(/[\d.]+/g); if (!m) return null;
    const a = m.length > 3 ? +m[3] : 1; return a === 0 ? null : m.slice(0, 3).map(Number); };
  const lum = (c) => { const v = c.map((x) => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const htmlBg = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
    if (c) return c; } return [255, 255, 255]; };
  const svgBg = (el) => {
    const st = getComputedStyle(el);
    if (el.classList.contains('fl-edge-label')) return rgb(st.stroke);
    const node = el.closest('.fl-node'); if (node) return rgb(getComputedStyle(node.querySelector('.fl-shape')).fill);
    const cl = el.closest('.fl-cluster'); if (cl) return rgb(getComputedStyle(cl.querySelector('.fl-cluster-head')).fill);
    return htmlBg(el.closest('.fl-canvas') || el.ownerSVGElement.parentElement);
  };
  const out = [];
  for (const sel of selectors) {
    let worst = null;
    for (const el of document.querySelectorAll(sel)) {
      if (!el.getClientRects().length || !(el.textContent || el.placeholder || '').trim()) continue;
      const isSvg = el instanceof SVGElement, st = getComputedStyle(el);
      const fg = rgb(isSvg ? st.fill : st.color), bg = isSvg ? svgBg(el) : htmlBg(el);
      if (!fg || !bg) continue;
      const r = ratio(fg, bg);
      if (!worst || r < worst[2]) worst = [sel, (el.textContent || el.placeholder).trim().slice(0, 40), r];
    }
    if (worst) out.push(worst);
  }
  return out;
}
