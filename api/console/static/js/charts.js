// Small SVG charts, drawn here rather than by a vendored library: lines over days,
// grouped and stacked bars. Every chart comes with its figures as a table (for screen
// readers, and for anyone who wants the exact numbers), and colours are not the only
// cue: the legend and the table name every series.

import {h} from './dom.js';

const H = 260;
const M = {top: 14, right: 14, bottom: 44, left: 52};
const PLOT_H = H - M.top - M.bottom;

let charts = 0;

/** A round step for about four grid lines up to ``value``, and the top it gives. */
function scale(value, integer) {
  if (!(value > 0)) return {top: 1, step: integer ? 1 : 0.25};
  const rough = value / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  let step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough);
  if (integer) step = Math.max(1, Math.round(step));
  return {top: Math.ceil(value / step) * step, step};
}

function yAxis(geometry, top, step, format) {
  const {W} = geometry;
  const group = h('svg:g', {class: 'axis y'});
  for (let value = 0; value <= top + step / 2; value += step) {
    const y = M.top + PLOT_H - (PLOT_H * value) / top;
    group.append(
      h('svg:line', {x1: M.left, x2: W - M.right, y1: y, y2: y, class: 'grid'}),
      h('svg:text', {x: M.left - 6, y: y + 4, 'text-anchor': 'end'}, format(value)));
  }
  return group;
}

function xAxis(geometry, categories, labelOf) {
  const {W} = geometry;
  const plotW = W - M.left - M.right;
  const group = h('svg:g', {class: 'axis x'});
  const band = plotW / Math.max(1, categories.length);
  const every = Math.max(1, Math.ceil(categories.length / Math.floor(W / 80)));
  categories.forEach((category, i) => {
    if (i % every !== 0) return;
    group.append(h('svg:text', {x: M.left + band * (i + 0.5), y: H - M.bottom + 18,
                                'text-anchor': 'middle'}, labelOf(category)));
  });
  return group;
}

function table(categories, series, labelOf, format, caption) {
  return h('details', {class: 'chart-data'},
    h('summary', null, 'Figures as a table'),
    h('div', {class: 'scroll', tabindex: 0, role: 'region', 'aria-label': `${caption}: figures`},
      h('table', null,
        h('caption', {class: 'visually-hidden'}, caption),
        h('thead', null, h('tr', null, h('th', {scope: 'col'}, ''),
          series.map((s) => h('th', {scope: 'col'}, s.name)))),
        h('tbody', null, categories.map((category, i) => h('tr', null,
          h('th', {scope: 'row'}, labelOf(category)),
          series.map((s) => h('td', null, s.values[i] === null ? '–' : format(s.values[i])))))))));
}

/** A chart as a <figure>.
 * kind: 'line' | 'bars' (grouped) | 'stacked'; categories: the x values; series:
 * [{name, values: [number|null, ...]}]; labelOf(category) for the axis and table;
 * format(value) for the y axis and the table; yMax to fix the scale (percentages);
 * integer for counts; width of the drawing (its height is fixed: wider for long
 * series, so the text keeps its size). */
export function chart({title, description, kind, categories, series, labelOf = String,
                       format = String, yMax, integer = false, width = 640}) {
  const geometry = {W: width};
  const W = width;
  const PLOT_W = W - M.left - M.right;
  charts += 1;
  const id = `chart-${charts}`;
  const figure = h('figure', {class: `chart chart-${kind}`, 'aria-labelledby': `${id}-title`},
    h('figcaption', {id: `${id}-title`}, title));
  const values = series.flatMap((s) => s.values).filter((v) => v !== null && v !== undefined);
  if (!categories.length || !values.length) {
    figure.append(h('p', {class: 'empty'}, 'No figures in this range yet.'));
    return figure;
  }
  const highest = kind === 'stacked'
    ? Math.max(...categories.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0)))
    : Math.max(...values);
  const {top, step} = yMax ? {top: yMax, step: yMax / 4} : scale(highest, integer);
  const y = (v) => M.top + PLOT_H - (PLOT_H * v) / top;
  const band = PLOT_W / categories.length;
  const svg = h('svg:svg', {viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'chart-svg',
                            'aria-labelledby': `${id}-title ${id}-desc`, focusable: 'false'},
    h('svg:desc', {id: `${id}-desc`}, description ?? title),
    yAxis(geometry, top, step, format), xAxis(geometry, categories, labelOf));
  if (kind === 'line') {
    series.forEach((s, si) => {
      const x = (i) => M.left + band * (i + 0.5);
      let d = '';
      let pen = false;
      s.values.forEach((v, i) => {
        if (v === null || v === undefined) { pen = false; return; }
        d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
        pen = true;
      });
      const group = h('svg:g', {class: `series s${si}`});
      if (d) group.append(h('svg:path', {d, class: 'line'}));
      s.values.forEach((v, i) => {
        if (v === null || v === undefined) return;
        group.append(h('svg:circle', {cx: x(i), cy: y(v), r: 3, class: 'dot'},
          h('svg:title', null, `${s.name}, ${labelOf(categories[i])}: ${format(v)}`)));
      });
      svg.append(group);
    });
  } else {
    const stacked = kind === 'stacked';
    const inner = stacked ? band * 0.7 : (band * 0.8) / series.length;
    const base = categories.map(() => 0);
    series.forEach((s, si) => {
      const group = h('svg:g', {class: `series s${si}`});
      s.values.forEach((v, i) => {
        if (!v) return;
        const x0 = M.left + band * i + (stacked ? band * 0.15 : band * 0.1 + inner * si);
        const y1 = y(base[i] + v);
        const height = y(base[i]) - y1;
        group.append(h('svg:rect', {x: x0.toFixed(1), y: y1.toFixed(1),
                                    width: Math.max(1, inner - 1).toFixed(1),
                                    height: Math.max(0.5, height).toFixed(1), class: 'bar'},
          h('svg:title', null, `${s.name}, ${labelOf(categories[i])}: ${format(v)}`)));
        if (stacked) base[i] += v;
      });
      svg.append(group);
    });
  }
  figure.append(svg,
    h('ul', {class: 'legend'}, series.map((s, si) => h('li', {class: `s${si}`},
      h('span', {class: 'swatch', 'aria-hidden': 'true'}), s.name))),
    table(categories, series, labelOf, format, title));
  return figure;
}
