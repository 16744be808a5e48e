// Draws a report's timeline page with the report's viewer.js under node, in a stand-in DOM, and
// prints every text the viewer placed on the chart (tests/cli/report_views.rs checks that no two
// overlap and none leaves the chart). Arguments: the page, the viewer, the chart's width in px.
// Prints one JSON line per drawing: as the page opens, then after "whole run".
const fs = require('fs');
const [page, viewer, width] = process.argv.slice(2);
const html = fs.readFileSync(page, 'utf8');
const data = html.match(/id="timeline-data">([\s\S]*?)<\/script>/)[1];
class El {
  constructor(tag) { this.tag = tag; this.attrs = {}; this.children = []; this.dataset = {}; this.style = {}; this.text = ''; }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  getAttribute(k) { return this.attrs[k]; }
  appendChild(c) { this.children.push(c); return c; }
  addEventListener() {}
  insertAdjacentHTML() {}
  getBoundingClientRect() { return {left: 0, top: 0}; }
  remove() {}
  get classList() { return {add() {}, remove() {}}; }
  set textContent(v) { this.text = v; if (v === '') this.children = []; }
  get textContent() { return this.text; }
}
const els = {};
const byId = id => els[id] || (els[id] = new El('div'));
byId('timeline-data').text = data;
byId('chart').clientWidth = Number(width);
global.document = {getElementById: byId, createElementNS: (_, t) => new El(t), createElement: t => new El(t)};
global.window = {addEventListener() {}, innerWidth: 1600, innerHeight: 900};
global.location = {hash: ''};
new Function(fs.readFileSync(viewer, 'utf8'))();
function drawing() {
  const svg = byId('chart').children.find(c => c.tag === 'svg');
  const texts = svg.children.filter(c => c.tag === 'text').map(t => ({
    x: Number(t.attrs.x), y: Number(t.attrs.y), text: t.text, class: t.attrs.class || ''}));
  return {width: Number(svg.attrs.width), height: Number(svg.attrs.height),
    from: Number(byId('from').value), to: Number(byId('to').value), texts};
}
console.log(JSON.stringify(drawing()));
byId('reset').onclick();
console.log(JSON.stringify(drawing()));
