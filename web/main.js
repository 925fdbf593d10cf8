// The page: opens a scene (the ?scene= URL parameter, the export's manifest.json, or a dropped file): a splat file,
// decoded in the worker (the engine's C++ as WebAssembly), or a scene JSON, read in the worker by the engine's scene
// document, whose objects' files are then fetched and decoded one by one; draws every object in one frame with the
// WebGPU renderer (renderer.js), from the scene's camera, or the one `splatforge render` frames, and orbits it with
// the mouse. ?readback=1 draws one frame for the camera the URL gives and prints the image and the figures to the
// console (lines starting "SFWEB"), for the tests (docs/web.md); ?passes=1 prints each WGSL pass's output buffers of
// that frame, which the tests compare with the engine's CPU functions element by element.
import { openDevice, Renderer, TIMED_PASSES } from './renderer.js';

const params = new URLSearchParams(location.search);
const readback = params.get('readback') === '1';
const passes = params.get('passes') === '1';
let timestampsWhy = '';  // why the frame has no per-pass timings
const $ = (id) => document.getElementById(id);
const canvas = $('canvas');

function log(line) { console.log(`SFWEB ${line}`); }
function status(text) { $('status').textContent = text; }
function progress(fraction) {
  const p = $('progress');
  p.style.display = fraction === null ? 'none' : 'block';
  if (fraction === null) return;
  if (fraction === undefined) p.removeAttribute('value'); else p.value = fraction;
}
// An error in the command line's words ("error: " and the engine's message naming the file and the reason).
function showError(message) {
  $('error').textContent = `error: ${message}`;
  status('');
  progress(null);
  log(`ERROR ${message}`);
}

function numbers(name, count) {
  const text = params.get(name);
  if (text === null) return null;
  const v = text.split(',').map(Number);
  if (v.length !== count || v.some((x) => !Number.isFinite(x))) throw new Error(`URL parameter ${name}: expected ${count} comma-separated numbers, got '${text}'`);
  return v;
}

// Camera centre from world_to_camera's rows (Camera::position: -R^T t).
function eyeOf(view) {
  const e = [0, 0, 0];
  for (let j = 0; j < 3; ++j) e[j] = -(view[j] * view[3] + view[4 + j] * view[7] + view[8 + j] * view[11]);
  return e;
}

const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const normalize = (a) => { const l = Math.hypot(a[0], a[1], a[2]); return [a[0] / l, a[1] / l, a[2] / l]; };

// The orbit: around the target, at a distance, turned by yaw about the up axis and pitched from the starting
// view direction; the camera is built as lookAtCamera (render/camera.cpp) builds it.
class Orbit {
  constructor(start) {
    this.target = start.slice(19, 22);
    this.up = start.slice(22, 25);
    this.fov = start[25];
    const eye = start.slice(16, 19);
    const off = sub(this.target, eye);
    this.distance = Math.hypot(...off);
    this.forward0 = normalize(off);
    this.right0 = normalize(cross(this.forward0, this.up));
    this.yaw = 0;
    this.pitch = 0;
    this.moved = false;  // the mouse has turned or zoomed it
  }
  camera(width, height) {
    const cp = Math.cos(this.pitch), sp = Math.sin(this.pitch), cy = Math.cos(this.yaw), sy = Math.sin(this.yaw);
    const down = [-this.up[0], -this.up[1], -this.up[2]];
    const forward = normalize([0, 1, 2].map((k) => cp * (cy * this.forward0[k] + sy * this.right0[k]) + sp * down[k]));
    const eye = [0, 1, 2].map((k) => this.target[k] - forward[k] * this.distance);
    const right = normalize(cross(forward, this.up));
    const d = cross(forward, right);
    const view = [...right, -dot(right, eye), ...d, -dot(d, eye), ...forward, -dot(forward, eye)];
    const f = 0.5 * height / Math.tan(0.5 * this.fov * Math.PI / 180);
    return { view, fx: f, fy: f, cx: 0.5 * width, cy: 0.5 * height, eye, width, height };
  }
}

// A file's bytes over HTTP, with progress (`what` says which file of how many); errors in the loader's words,
// naming the file `name`.
async function fetchBytes(url, name, what = '') {
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    throw new Error(`${name}: cannot open: ${e.message}`);
  }
  if (response.status === 404) throw new Error(`${name}: file is missing`);
  if (!response.ok) throw new Error(`${name}: cannot open: HTTP ${response.status}`);
  const total = Number(response.headers.get('Content-Length')) || 0;
  const reader = response.body.getReader();
  const chunks = [];
  let got = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    got += value.length;
    status(`loading ${name}${what}: ${(got / 1e6).toFixed(1)}${total ? ` / ${(total / 1e6).toFixed(1)}` : ''} MB`);
    progress(total ? got / total : undefined);
  }
  const bytes = new Uint8Array(got);
  let at = 0;
  for (const c of chunks) { bytes.set(c, at); at += c.length; }
  return bytes.buffer;
}

function readDropped(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onprogress = (e) => {
      status(`reading ${file.name}: ${(e.loaded / 1e6).toFixed(1)} / ${(file.size / 1e6).toFixed(1)} MB`);
      progress(file.size ? e.loaded / file.size : undefined);
    };
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(new Error(`${file.name}: cannot open: ${reader.error && reader.error.message}`));
    reader.readAsArrayBuffer(file);
  });
}

// The worker (decode_worker.js): requests answered by id, its progress shown as the status line.
const worker = new Worker(new URL('decode_worker.js', import.meta.url));
const pending = new Map();
let nextRequest = 1;
worker.onmessage = (e) => {
  const m = e.data, p = pending.get(m.id);
  if (!p) return;
  if (m.type === 'progress') { status(m.stage); progress(undefined); return; }
  pending.delete(m.id);
  if (m.type === 'error') p.reject(new Error(m.message)); else p.resolve(m);
};
worker.onerror = (e) => {
  for (const p of pending.values()) p.reject(new Error(`the decoder did not start: ${e.message || 'its script or WebAssembly is missing'}`));
  pending.clear();
};
function request(message, transfer = []) {
  return new Promise((resolve, reject) => {
    const id = nextRequest++;
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, ...message }, transfer);
  });
}

const IDENTITY = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0];  // rows 0..2 of the identity transform
const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

// The URL of an object's file: its path as the scene writes it, relative to the scene's URL, each step escaped.
function objectUrl(file, sceneUrl) {
  return new URL(file.split('/').map(encodeURIComponent).join('/'), sceneUrl);
}

// The objects of a scene the worker has read (`info`: sf_web_scene_parse): each file fetched and decoded once, in
// the order the objects name them; objects naming one file share its cloud. A failure names the first object that
// names the file, as the command line's scene loader does.
async function loadObjects(info, sceneUrl) {
  const files = new Map();  // URL -> the objects naming it
  info.objects.forEach((o, i) => {
    const url = objectUrl(o.file, sceneUrl).href;
    if (!files.has(url)) files.set(url, []);
    files.get(url).push(i);
  });
  const clouds = [], cloudOf = [];
  let k = 0;
  for (const [url, objects] of files) {
    const o = info.objects[objects[0]];
    ++k;
    try {
      const bytes = await fetchBytes(url, o.resolved, files.size > 1 ? ` (file ${k} of ${files.size})` : '');
      const r = await request({ op: 'object', bytes, name: o.resolved, objects }, [bytes]);
      for (const w of r.info.warnings) console.warn(`${o.context}: ${w}`);
      for (const i of objects) cloudOf[i] = clouds.length;
      clouds.push(r.cloud);
    } catch (e) {
      throw new Error(`${o.context}: ${e.message}`);
    }
  }
  return { clouds, objects: info.objects.map((o, i) => ({ cloud: cloudOf[i], toWorld: o.to_world, toObject: o.to_object })), files: files.size };
}

let renderer = null, orbit = null, fixedCamera = null, urlBackground = null, background = [0, 0, 0];
// The starting camera at the size it was made for: drawn as it is until the orbit moves or the size changes.
let home = null;
let drawing = false, again = false, loading = false;

function canvasSize() {
  const size = numbers('size', 2);
  if (size) return size;
  const r = devicePixelRatio || 1;
  return [Math.max(16, Math.round(canvas.clientWidth * r)), Math.max(16, Math.round(canvas.clientHeight * r))];
}

function currentCamera() {
  const [w, h] = canvasSize();
  if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
  if (fixedCamera) return { ...fixedCamera, width: w, height: h };
  if (home && !orbit.moved && home.width === w && home.height === h) return home;
  return orbit.camera(w, h);
}

// The frame's figures for the timings line: per pass where the device stamps them, else why not.
function passTimings(s) {
  if (!s.passMs) return `no per-pass GPU timings (${timestampsWhy})`;
  const parts = TIMED_PASSES.filter((p) => p in s.passMs).map((p) => `${p} ${s.passMs[p].toFixed(2)}`);
  const total = Object.values(s.passMs).reduce((a, b) => a + b, 0);
  return `GPU passes (ms): ${parts.join(', ')}; sum ${total.toFixed(2)}`;
}

async function draw() {
  if (!renderer || !renderer.scene) return;
  if (drawing) { again = true; return; }
  drawing = true;
  try {
    do {
      again = false;
      const s = await renderer.render(currentCamera(), background);
      const over = s.keysWanted > s.keys ? ` (${s.keysWanted - s.keys} keys past the GPU's buffer limit were dropped)` : '';
      $('timings').textContent = `frame ${s.ms.toFixed(1)} ms (submit to done), ${s.splats} splats, ${s.keys} tile keys${over}; ${passTimings(s)}`;
    } while (again);
  } catch (e) {
    showError(e.message);
  } finally {
    drawing = false;
  }
}

// Opens `name`, whose bytes `bytesPromise` gives: a splat file, or a scene JSON whose files are fetched relative to
// `sceneUrl` (null for a dropped file, which brings no files with it).
async function open(bytesPromise, name, sceneUrl) {
  if (loading) return;
  loading = true;
  $('error').textContent = '';
  let keptScene = false;
  try {
    const t0 = performance.now();
    const bytes = await bytesPromise;
    const [w, h] = canvasSize();
    const opened = await request({ op: 'open', bytes, name, width: w, height: h }, [bytes]);
    let scene, camera, described, sceneBackground = null;
    if (opened.type === 'splats') {
      const info = opened.info;
      for (const warning of info.warnings) console.warn(warning);
      scene = { clouds: [opened.cloud], objects: [{ cloud: 0, toWorld: IDENTITY, toObject: IDENTITY }] };
      camera = opened.camera;
      described = `${name}: ${info.format}${info.version ? ` ${info.version}` : ''}, ${info.gaussians} gaussians, SH degree ${info.sh_degree}`;
    } else {
      keptScene = true;
      if (!sceneUrl) throw new Error(`${name}: a dropped scene JSON brings none of the files it names; serve its folder and open ?scene=${name} (splatforge export-web writes such a folder)`);
      const loaded = await loadObjects(opened.info, sceneUrl);
      camera = (await request({ op: 'scene-camera', width: w, height: h })).camera;
      keptScene = false;
      scene = loaded;
      sceneBackground = opened.info.background;
      const gaussians = loaded.objects.reduce((sum, o) => sum + loaded.clouds[o.cloud].count, 0);
      described = `${name}: ${plural(loaded.objects.length, 'object')} from ${plural(loaded.files, 'file')}, ${gaussians} gaussians${opened.info.camera ? ', the scene\'s camera' : ''}`;
    }
    const t1 = performance.now();
    status(described);
    progress(null);
    renderer.setScene(scene);
    background = urlBackground || sceneBackground || [0, 0, 0];
    orbit = new Orbit(camera);
    home = { view: camera.slice(0, 12), fx: camera[12], fy: camera[13], cx: camera[14], cy: camera[15], eye: camera.slice(16, 19), width: w, height: h };
    const first = currentCamera();
    const s = await renderer.render(first, background, { capture: passes });
    const t2 = performance.now();
    const timings = `first frame ${s.ms.toFixed(1)} ms, ${s.splats} splats, ${s.keys} tile keys; load and decode ${(t1 - t0).toFixed(0)} ms; ${passTimings(s)}`;
    $('timings').textContent = timings;
    log(`FIRST-FRAME ${performance.now().toFixed(0)} ms since the page opened; load and decode ${(t1 - t0).toFixed(0)} ms; first frame ${(t2 - t1).toFixed(0)} ms; ${s.splats} splats, ${s.keys} keys`);
    log(`TIMINGS ${timings}`);
    if (readback) await printImage(first);
    if (passes) printPasses(s.passes);
  } catch (e) {
    if (keptScene) request({ op: 'close' }).catch(() => {});
    showError(e.message);
  } finally {
    loading = false;
  }
}

// Bytes as base64 CHUNK lines of at most 32,000 characters, between the line `head` (to which the chunk count is
// added) and the line `end`.
function printChunks(head, bytes, end) {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  const b64 = btoa(text), line = 32000, chunks = Math.ceil(b64.length / line);
  log(`${head} ${chunks}`);
  for (let i = 0; i < chunks; ++i) log(`CHUNK ${i} ${b64.slice(i * line, (i + 1) * line)}`);
  log(end);
}

// The image as float32 RGBA rows.
async function printImage(camera) {
  const image = await renderer.readImage();
  printChunks(`IMAGE ${camera.width} ${camera.height}`, new Uint8Array(image.buffer), 'IMAGE-END');
}

// The first frame's pass outputs (?passes=1; renderer.js readCapture): a PASSES line with the frame's sizes and
// counters, then each buffer as BUFFER NAME BYTES CHUNKS, its chunks, BUFFER-END NAME; PASSES-END after the last.
function printPasses(p) {
  log(`PASSES slots ${p.slots} tiles ${p.tilesX} ${p.tilesY} keys-wanted ${p.keysWanted} keys ${p.keys}`);
  for (const name of ['proj', 'touched', 'offsets', 'emitted_tiles', 'emitted_depths', 'emitted_values', 'sorted_tiles',
    'sorted_depths', 'sorted_values', 'ranges']) {
    printChunks(`BUFFER ${name} ${p[name].length}`, p[name], `BUFFER-END ${name}`);
  }
  log('PASSES-END');
}

function controls() {
  let dragging = null;
  canvas.addEventListener('pointerdown', (e) => { dragging = { x: e.clientX, y: e.clientY }; canvas.setPointerCapture(e.pointerId); });
  canvas.addEventListener('pointerup', () => { dragging = null; });
  canvas.addEventListener('pointermove', (e) => {
    if (!dragging || !orbit || fixedCamera) return;
    orbit.moved = true;
    orbit.yaw -= (e.clientX - dragging.x) * 0.005;
    orbit.pitch = Math.max(-1.5, Math.min(1.5, orbit.pitch + (e.clientY - dragging.y) * 0.005));
    dragging = { x: e.clientX, y: e.clientY };
    draw();
  });
  canvas.addEventListener('wheel', (e) => {
    if (!orbit || fixedCamera) return;
    e.preventDefault();
    orbit.moved = true;
    orbit.distance *= Math.exp(e.deltaY * 0.001);
    draw();
  }, { passive: false });
  new ResizeObserver(() => draw()).observe(canvas);
  document.addEventListener('dragover', (e) => { e.preventDefault(); document.body.classList.add('dragging'); });
  document.addEventListener('dragleave', () => document.body.classList.remove('dragging'));
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    document.body.classList.remove('dragging');
    const file = e.dataTransfer.files[0];
    if (file) { fixedCamera = null; open(readDropped(file), file.name, null); }
  });
}

async function sceneName() {
  const named = params.get('scene');
  if (named) return named;
  const r = await fetch('manifest.json').catch(() => null);
  if (!r || !r.ok) return null;
  const manifest = await r.json();
  return manifest.scene || null;
}

async function main() {
  try {
    urlBackground = numbers('bg', 3);
    const view = numbers('view', 12);
    if (view) {
      const [fx, fy, cx, cy] = numbers('intrinsics', 4) || (() => { throw new Error('URL parameter view needs intrinsics=fx,fy,cx,cy'); })();
      fixedCamera = { view, fx, fy, cx, cy, eye: eyeOf(view) };
    }
    const opened = await openDevice({ timestamps: params.get('timestamps') !== '0' });
    const device = opened.device;
    timestampsWhy = opened.timestampsWhy;
    log(`ADAPTER ${opened.adapterName}; ${opened.timestamps ? 'timestamp-query' : `no timestamp-query: ${timestampsWhy}`}`);
    device.lost.then((info) => showError(`the WebGPU device was lost: ${info.message}`));
    device.addEventListener('uncapturederror', (e) => showError(`WebGPU: ${e.error.message}`));
    renderer = await Renderer.create(device, canvas, new URL('.', import.meta.url));
    controls();
    const name = await sceneName();
    if (name) {
      const url = new URL(name, location.href);
      await open(fetchBytes(url, name), name, url);
    } else {
      status('drop a splat file here');
    }
  } catch (e) {
    showError(e.message);
  }
  log('READY');
}

main();
