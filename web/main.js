// The page: opens a scene (the ?scene= URL parameter, the export's manifest.json, or a dropped file): a neural
// generator (.onnx: run by onnxruntime-web in neural_worker.js at each time drawn, its contract decided by the
// engine's C++ in the decode worker, its outputs decoded on the GPU), a splat file,
// decoded in the worker (the engine's C++ as WebAssembly), a glTF model, read and posed in the worker by the
// engine's glTF reader and animation runtime, or a scene JSON, read in the worker by the engine's scene document,
// whose objects' files are then fetched and decoded one by one (a generator object's model loaded in
// neural_worker.js and run per object at its model time, a character object's package read in the worker); draws every object in one frame with the WebGPU
// renderer (renderer.js), from the scene's camera, or the one `splatforge render` frames, and orbits or flies it
// with the mouse and keys (Navigator). Animated content (glTF clips) plays on a timeline (play and pause, a scrub
// bar, the clip played); ?t= fixes the scene time, ?clip= names a glTF file's clip as --clip does. ?readback=1 draws one frame for the camera the URL gives and prints the
// image and the figures to the console (lines starting "SFWEB"), for the tests (docs/web.md); ?passes=1 prints each
// WGSL pass's output buffers of that frame, which the tests compare with the engine's CPU functions element by
// element; ?input= plays key and mouse events on the page after the first frame and prints the camera after each.
import { openDevice, Renderer, TIMED_PASSES } from './renderer.js';

const params = new URLSearchParams(location.search);
const readback = params.get('readback') === '1';
const passes = params.get('passes') === '1';
const input = params.get('input');  // for tests: events to play after the first frame (playInput)
const digest = params.get('digest') === '1';  // for tests: each decoded file's digest (printDigest)
const fixedTime = params.get('t');  // a fixed scene time in seconds (render --time), the timeline paused there
const urlHullMode = params.get('hull') || 'baked';  // a splat hull opened directly: baked or sorted (render --hull-mode)
const urlClip = params.get('clip') || '';  // a glTF file's or a character's clip, by name or index (render --clip)
const urlExpression = params.get('expression');  // a character's face layer: morph target:weight, comma-separated
const urlLookAt = params.get('look-at');  // a character looks at this point (x,y,z in the character's space)
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

// The camera the mouse and keys move, built as lookAtCamera (render/camera.cpp) builds a camera: its view direction
// is turned by yaw about the up axis and pitched from the starting view's, in one of two modes that share it:
//   orbit: about a target, at a distance (drag turns it about the target, the wheel zooms);
//   fly: from its own eye (drag looks around, the view following the mouse; W A S D move forward, left, back and
//     right, E and Q up and down along the camera's axes, at FLY_SPEED times the scene's size a second; the wheel
//     makes that faster or slower).
// Switching keeps the view: orbit to fly keeps the eye, fly to orbit turns about the point `distance` ahead.
const FLY_SPEED = 0.25;  // scene sizes a second
const FLY_KEYS = { KeyW: [0, 0, 1], KeyS: [0, 0, -1], KeyD: [1, 0, 0], KeyA: [-1, 0, 0], KeyQ: [0, 1, 0], KeyE: [0, -1, 0] };  // camera axes: right, down, forward
class Navigator {
  constructor(start, mode) {
    this.target = start.slice(19, 22);
    this.up = start.slice(22, 25);
    this.fov = start[25];
    this.eye = start.slice(16, 19);
    const off = sub(this.target, this.eye);
    this.distance = Math.hypot(...off);
    this.forward0 = normalize(off);
    this.right0 = normalize(cross(this.forward0, this.up));
    this.yaw = 0;
    this.pitch = 0;
    this.speed = FLY_SPEED * (start[26] > 0 ? start[26] : this.distance);  // world units a second
    this.mode = mode;
    this.moved = false;  // the mouse or keys have moved it
  }
  // The camera's axes: right, down, forward.
  axes() {
    const cp = Math.cos(this.pitch), sp = Math.sin(this.pitch), cy = Math.cos(this.yaw), sy = Math.sin(this.yaw);
    const down = [-this.up[0], -this.up[1], -this.up[2]];
    const forward = normalize([0, 1, 2].map((k) => cp * (cy * this.forward0[k] + sy * this.right0[k]) + sp * down[k]));
    const right = normalize(cross(forward, this.up));
    return [right, cross(forward, right), forward];
  }
  eyeNow() {
    if (this.mode === 'fly') return this.eye;
    const forward = this.axes()[2];
    return [0, 1, 2].map((k) => this.target[k] - forward[k] * this.distance);
  }
  toggle() {
    if (this.mode === 'orbit') {
      this.eye = this.eyeNow();
      this.mode = 'fly';
    } else {
      const forward = this.axes()[2];
      this.target = [0, 1, 2].map((k) => this.eye[k] + forward[k] * this.distance);
      this.mode = 'orbit';
    }
  }
  drag(dx, dy) {
    this.moved = true;
    const turn = this.mode === 'orbit' ? -1 : 1;
    this.yaw += turn * dx * 0.005;
    this.pitch = Math.max(-1.5, Math.min(1.5, this.pitch + dy * 0.005));
  }
  wheel(deltaY) {
    if (this.mode === 'fly') {
      this.speed *= Math.exp(-deltaY * 0.001);
    } else {
      this.moved = true;
      this.distance *= Math.exp(deltaY * 0.001);
    }
  }
  // Flies for `seconds` with the keys `codes` held.
  fly(codes, seconds) {
    if (this.mode !== 'fly' || seconds <= 0) return;
    const axes = this.axes(), step = this.speed * seconds;
    for (const code of codes) {
      const along = FLY_KEYS[code];
      for (let a = 0; a < 3; ++a)
        for (let k = 0; k < 3; ++k) this.eye[k] += along[a] * axes[a][k] * step;
    }
    this.moved = true;
  }
  camera(width, height) {
    const [right, d, forward] = this.axes(), eye = this.eyeNow();
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

// The worker (decode_worker.js): requests answered by id, its progress shown as the status line. A file whose
// images lie beside it (an unpacked SOG's meta.json) asks for them: they are fetched relative to the file's `url`.
const worker = new Worker(new URL('decode_worker.js', import.meta.url));
const pending = new Map();
let nextRequest = 1;
worker.onmessage = (e) => {
  const m = e.data, p = pending.get(m.id);
  if (!p) return;
  if (m.type === 'progress') { status(m.stage); progress(undefined); return; }
  if (m.type === 'files') { sendFiles(m.id, m.files, p); return; }
  pending.delete(m.id);
  if (m.type === 'error') p.reject(Object.assign(new Error(m.message), { object: m.object })); else p.resolve(m);
};
worker.onerror = (e) => {
  for (const p of pending.values()) p.reject(new Error(`the decoder did not start: ${e.message || 'its script or WebAssembly is missing'}`));
  pending.clear();
};
function request(message, transfer = [], url = null, dropped = null) {
  return new Promise((resolve, reject) => {
    const id = nextRequest++;
    pending.set(id, { resolve, reject, url, dropped, name: message.name });
    worker.postMessage({ id, ...message }, transfer);
  });
}

// The neural generator runner (neural_worker.js: onnxruntime-web, a module worker started with the first model):
// requests answered by id.
let neuralWorker = null;
const neuralPending = new Map();
function neural(message, transfer = []) {
  if (!neuralWorker) {
    neuralWorker = new Worker(new URL('neural_worker.js', import.meta.url), { type: 'module' });
    neuralWorker.onmessage = (e) => {
      const p = neuralPending.get(e.data.id);
      if (!p) return;
      neuralPending.delete(e.data.id);
      if (e.data.type === 'error') p.reject(new Error(e.data.message)); else p.resolve(e.data);
    };
    neuralWorker.onerror = (e) => {
      for (const p of neuralPending.values()) p.reject(new Error(`the ONNX runtime did not start: ${e.message || 'its scripts (ort/) are missing'}`));
      neuralPending.clear();
    };
  }
  return new Promise((resolve, reject) => {
    const id = nextRequest++;
    neuralPending.set(id, { resolve, reject });
    neuralWorker.postMessage({ id, ...message }, transfer);
  });
}

// The neural generators shown, one per generator object (a model opened directly is one object: time 0, speed 1,
// the identity transform): each its model's name (its session in neural_worker.js; a scene's objects naming one
// model share it), the engine's contract, its inputs and outputs as the runtime lists them, whether its inputs
// depend on the camera, its object's transform (toWorld, rows 0..2) and timing (model time = time + speed x scene
// time, as SceneObject plays a generator), its index among the renderer's generators, its rows, and the scene
// time and camera of its last run.
let generators = [];

// The splat hulls shown (one opened directly, or a scene's hull objects in the worker's order): per hull its object
// and mesh instance in the renderer's scene, and the camera and time its frame inputs were last made for (the cel
// light and the shell's order follow the camera's heading bucket: the worker remakes them, buildHullFrame, when
// either changes).
let hulls = { shown: [], key: null };

// A hull object's heading as rows 0..2 of a turn of `degrees` about +y (the scene loader's readHullDrawing).
function headingRows(degrees) {
  const a = degrees * Math.PI / 180, c = Math.cos(a), s = Math.sin(a);
  return [c, 0, s, 0, 0, 1, 0, 0, -s, 0, c, 0];
}

// Adds one hull's frame inputs to the renderer's scene `scene`: its gaussians (the baked shell with its sort depths,
// or every splat in sorted mode) and its core's octagons in the mesh layer (unlit, one sample a pixel), both placed
// by `toWorld` (its object's transform times its heading; the frame inputs are in the hull's space, as
// buildHullFrame makes them). Returns where they are, for setHullFrame.
function addHull(scene, frame, toWorld = IDENTITY, toObject = IDENTITY, poses = null) {
  const shown = { object: -1, cloud: -1, instance: -1 };
  if (frame.cloud) {
    shown.cloud = scene.clouds.length;
    shown.object = scene.objects.length;
    scene.clouds.push(frame.cloud);
    scene.objects.push({ cloud: shown.cloud, toWorld, toObject, sortDepth: !!frame.sortDepths });
  }
  if (frame.core) {
    const vertices = frame.core.positions.length / 3;
    shown.instance = scene.instances.length;
    scene.instances.push({ model: scene.models.length, toWorld });
    scene.models.push({ clips: [], draws: [{ vertices, indices: frame.core.indices, colors: frame.core.colors, normals: false, texture: null, base_color: [1, 1, 1, 1], unlit: true }] });
    if (poses) poses.push({ draws: [{ positions: frame.core.positions, normals: null, matrix: [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1] }] });
  }
  return shown;
}

// The renderer's scene of one hull's frame inputs, opened directly (the identity transform).
function hullScene(frame) {
  const scene = { clouds: [], objects: [], models: [], instances: [] }, poses = [];
  const shown = addHull(scene, frame, IDENTITY, IDENTITY, poses);
  return { scene, shown, poses };
}

// Hands hull k's new frame inputs to the renderer (the counts are those of its first frame).
function setHullFrame(k, frame) {
  const sh = hulls.shown[k];
  if (frame.cloud && sh.cloud >= 0) renderer.setCloudData(sh.cloud, frame.cloud);
  if (frame.sortDepths && sh.object >= 0) renderer.setSortDepths(sh.object, frame.sortDepths);
  if (frame.core && sh.instance >= 0) {
    renderer.setPose(sh.instance, [{ positions: frame.core.positions, normals: null, matrix: [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1] }]);
    renderer.setMeshColors(sh.instance, 0, frame.core.colors);
  }
}

const hullKey = (cam, time) => JSON.stringify([cam.view, cam.fx, cam.fy, cam.cx, cam.cy, cam.width, cam.height, time]);

// Remakes the hulls' frame inputs in the worker when the camera or the time changed since they were made.
async function refreshHulls(cam, time) {
  if (!hulls.shown.length) return;
  const key = hullKey(cam, time);
  if (key === hulls.key) return;
  const { frames } = await request({ op: 'hull-frame', camera: { view: cam.view, fx: cam.fx, fy: cam.fy, cx: cam.cx, cy: cam.cy, width: cam.width, height: cam.height }, time });
  frames.forEach((f, k) => setHullFrame(k, f));
  hulls.key = key;
}
const GENERATOR_TIME_SPAN = 1.0;  // kGeneratorTimeSpan (neural/generator.h): one pass of model time 0..1
const isFloatType = (type) => /^(float|bfloat)/.test(type);
const shapeText = (dims) => `[${dims.join(', ')}]`;

// A float16 bit pattern as the float it is (core/half.cpp halfToFloat), for the starting camera's bounds.
function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1024 + m) * 2 ** (e - 25);
}

// The projection input (neural/generator.cpp projectionMatrix, n = 0.01, f = 1000), row-major, in float32 steps.
function projectionMatrix(cam) {
  const f32 = Math.fround, w = cam.width, h = cam.height, n = f32(0.01), f = f32(1000);
  return [
    f32(2 * cam.fx / w), 0, f32(f32(2 * cam.cx / w) - 1), 0,
    0, f32(2 * cam.fy / h), f32(f32(2 * cam.cy / h) - 1), 0,
    0, 0, f32(f / f32(f - n)), f32(f32(-f * n) / f32(f - n)),
    0, 0, 1, 0,
  ];
}

// A 4x4 matrix (row-major, 16 numbers) as the contract stores it: column-major, tensor[i][j] = M[j][i].
function matrixInput(m) {
  const t = new Float32Array(16);
  for (let i = 0; i < 4; ++i) for (let j = 0; j < 4; ++j) t[i * 4 + j] = m[j * 4 + i];
  return t;
}

// The model's inputs for model time `time` seen by `cam` (GaussianGenerator::frameInputs): the time in its declared
// shape (symbolic dimensions 1), the view (world_to_camera) and the projection.
function generatorFeeds(g, time, cam) {
  const feeds = [];
  const declared = (name) => g.signature.inputs.find((v) => v.name === name);
  if (g.contract.time) {
    const v = declared(g.contract.time);
    const dims = v && v.shape ? v.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : 1)) : [1];
    feeds.push({ name: g.contract.time, type: 'float32', dims, data: new Float32Array([time]) });
  }
  if (g.contract.view) feeds.push({ name: g.contract.view, type: 'float32', dims: [4, 4], data: matrixInput([...cam.view, 0, 0, 0, 1]) });
  if (g.contract.projection) feeds.push({ name: g.contract.projection, type: 'float32', dims: [4, 4], data: matrixInput(projectionMatrix(cam)) });
  return feeds;
}

// The checks decodeGenerated (neural/generator.cpp) makes of a run's outputs, in its words, and what the GPU
// decode needs of them: rows, colour channels, the live count and how the decode reads it.
function checkGenerated(g, outputs) {
  const c = g.contract, path = g.name;
  const get = (name) => {
    if (!outputs[name]) throw new Error(`${path}: output '${name}' missing from the results`);
    return outputs[name];
  };
  const gauss = get(c.gaussians), colour = get(c.colour);
  if (!isFloatType(gauss.type) || gauss.dims.length !== 2 || gauss.dims[1] !== 10) throw new Error(`${path}: output '${c.gaussians}' is ${gauss.type} ${shapeText(gauss.dims)}, expected float [N, 10]`);
  const n = gauss.dims[0];
  const channels = c.colour_channels === 48 ? 48 : (colour.dims.length === 2 ? colour.dims[1] : -1);
  if (!isFloatType(colour.type) || colour.dims.length !== 2 || colour.dims[0] !== n || colour.dims[1] !== channels || ![48, 3, 4].includes(channels)) throw new Error(`${path}: output '${c.colour}' is ${colour.type} ${shapeText(colour.dims)}, expected float [${n}, ${c.colour_channels}]`);
  let live = n, countKind = 0, count = null;
  if (c.count) {
    count = get(c.count);
    if (count.dims.reduce((a, b) => a * b, 1) !== 1) throw new Error(`${path}: output '${c.count}' has shape ${shapeText(count.dims)}, expected [1]`);
    live = count.value;
    if (live < 0 || live > n) throw new Error(`${path}: output '${c.count}' says ${live} gaussians, the outputs hold ${n}`);
    countKind = count.type === 'int32' ? 1 : count.type === 'int64' ? 2 : 0;  // another integer type: given as a number
  }
  for (const [name, t] of [[c.gaussians, gauss], [c.colour, colour]])
    if (t.type !== 'float32' && t.type !== 'float16') throw new Error(`${path}: output '${name}' is ${t.type}: the page decodes float32 and float16 outputs (${t.type} is not in the web build yet)`);
  return { rows: n, channels, live, countKind, gauss, colour, count };
}

const rawOutputs = (r) => ({ gauss: r.gauss.bytes, colour: r.colour.bytes, count: r.countKind ? r.count.bytes : null, live: r.live });
const cameraKey = (cam) => ({ view: cam.view.join(','), intrinsics: [cam.fx, cam.fy, cam.cx, cam.cy, cam.width, cam.height].join(',') });

// A generator object's model time at scene time `time` (GeneratorObject::pose: time + speed x t).
const modelTime = (g, time) => g.time + g.speed * time;

// The camera generator g's model is given for the frame's camera `cam`: the frame's seen from its object
// (cameraSeenFrom: world_to_camera x object_to_world).
function objectCamera(g, cam) {
  return g.toWorld === IDENTITY ? cam : { ...cam, view: composeAffine(cam.view, g.toWorld) };
}

// Runs generator g for the frame's camera `cam` at scene time `time` and hands its outputs to the renderer.
async function runGenerator(g, time, cam) {
  const { outputs } = await neural({ op: 'run', name: g.name, feeds: generatorFeeds(g, modelTime(g, time), objectCamera(g, cam)) });
  if (!generators.includes(g)) return;  // another file opened meanwhile
  const r = checkGenerated(g, outputs);
  if (r.rows !== g.rows) throw new Error(`${g.name}: the model's outputs went from ${g.rows} to ${r.rows} rows between runs (the page keeps the first run's slots)`);
  renderer.setGenerated(g.index, rawOutputs(r));
  g.ran = { time, ...cameraKey(cam) };
}

// Whether generator g must run again for `cam` at scene time `time` (its time or camera inputs changed).
function generatorStale(g, cam, time) {
  if (!g.ran) return false;
  if (g.contract.time && g.ran.time !== time) return true;
  if (!g.viewDependent) return false;
  const k = cameraKey(cam);
  return g.ran.view !== k.view || g.ran.intrinsics !== k.intrinsics;
}

// Runs every generator whose inputs changed for `cam` at scene time `time`.
async function runStaleGenerators(cam, time) {
  for (const g of generators) if (generatorStale(g, cam, time)) await runGenerator(g, time, cam);
}

// Loads a neural generator's model (`bytes` of the .onnx `name`) in onnxruntime-web (with `reset`, the models
// loaded before are let go) and decides its contract with the engine from its inputs and outputs as the runtime
// lists them. A model with control inputs is refused (the page has no "inputs" to give them).
async function openGeneratorModel(bytes, name, reset) {
  const signature = await neural({ op: 'open', bytes, name, reset }, [bytes]);
  const { contract } = await request({ op: 'generator-contract', name, signature: { inputs: signature.inputs, outputs: signature.outputs, metadata: signature.metadata } });
  // GaussianGenerator::frameInputs: the page gives no control input.
  if (contract.controls.length) throw new Error(`${name}: control input '${contract.controls[0]}' is not set (give it in the scene's "inputs")`);
  return { name, contract, signature, viewDependent: !!(contract.view || contract.projection) };
}

// Generator g's first run at scene time `time` for the frame's camera `cam` (null: the identity camera at w x h,
// seen from its object): its rows, the cloud of its slots (the model's N rows, decoded on the GPU from each run's
// outputs), the decode's parameters, the run's outputs and its live centres (in the object's space, for the
// starting camera only: decoded from float16 here, the frame's decode runs on the GPU).
async function firstRun(g, time, cam, w, h) {
  const seen = cam || { view: IDENTITY, fx: w, fy: w, cx: 0.5 * w, cy: 0.5 * h, width: w, height: h };
  const { outputs } = await neural({ op: 'run', name: g.name, feeds: generatorFeeds(g, modelTime(g, time), objectCamera(g, seen)) });
  const r = checkGenerated(g, outputs);
  g.rows = r.rows;
  g.ran = { time, ...cameraKey(seen) };
  const centres = new Float32Array(3 * r.live);
  const f16 = r.gauss.type === 'float16', raw = f16 ? new Uint16Array(r.gauss.bytes) : new Float32Array(r.gauss.bytes);
  for (let i = 0; i < r.live; ++i) for (let k = 0; k < 3; ++k) centres[3 * i + k] = f16 ? halfToFloat(raw[10 * i + k]) : raw[10 * i + k];
  const degree = r.channels === 48 ? 3 : 0, rows = r.rows;
  const cloud = {
    count: rows, shDegree: degree, antialiased: false, linear: false, screenFilter: 0.3,  // GaussianCloud's defaults
    positions: new Float32Array(3 * rows), covariances: new Float32Array(6 * rows), opacities: new Float32Array(rows),
    sh: new Float32Array(3 * (degree + 1) ** 2 * rows),
  };
  const decode = { rows, channels: r.channels, colourIsSh: g.contract.colour_is_sh, gaussF16: f16, colourF16: r.colour.type === 'float16', countKind: r.countKind, liveStatic: r.live };
  const inputs = [g.contract.time && `time '${g.contract.time}'`, g.contract.view && `view '${g.contract.view}'`, g.contract.projection && `projection '${g.contract.projection}'`].filter(Boolean);
  const described = `neural generator (onnxruntime-web, WebAssembly), inputs ${inputs.length ? inputs.join(', ') : 'none (static)'}; ${r.live} of ${rows} rows live, ${degree === 3 ? 'SH degree 3' : g.contract.colour_is_sh ? 'SH DC' : 'RGB'}, ${r.gauss.type} gaussians`;
  return { cloud, decode, first: rawOutputs(r), centres, described };
}

// Opens a neural generator (`bytes` of the .onnx `name`) as one object (time 0, speed 1: the model time is the
// scene time), run at scene time `time` (a model with camera inputs for `cam`, else the identity camera at the
// canvas's size), and framed as `render` frames it. Returns the scene, the starting camera, the description, the
// generator and its first run's outputs.
async function openGenerator(bytes, name, w, h, time, cam) {
  const g = { ...(await openGeneratorModel(bytes, name, true)), time: 0, speed: 1, toWorld: IDENTITY, index: 0, rows: -1, ran: null };
  const run = await firstRun(g, time, cam, w, h);
  const { camera } = await request({ op: 'generator-camera', name, positions: run.centres, width: w, height: h }, [run.centres.buffer]);
  const scene = { clouds: [run.cloud], objects: [{ cloud: 0, toWorld: IDENTITY, toObject: IDENTITY }], generators: [{ object: 0, ...run.decode }] };
  return { scene, camera, described: `${name}: ${run.described}`, generators: [g], firsts: [run.first], span: g.contract.time ? GENERATOR_TIME_SPAN : 0 };
}

// The image files `files` ([{name, path}]) of request `id`'s file, fetched relative to its URL: each its bytes, or
// why it could not be had in the loader's words (the engine reports the first it needs). A dropped file brings none.
async function sendFiles(id, files, { url, name, dropped }) {
  if (!url && dropped) {  // a dropped folder: its files by their paths relative to the file opened
    const out = [];
    for (const f of files) {
      const file = dropped.get(f.name);
      try {
        if (!file) throw new Error(`${f.path}: file is missing`);
        out.push({ path: f.path, bytes: await readDropped(file) });
      } catch (e) {
        out.push({ path: f.path, error: e.message });
      }
    }
    worker.postMessage({ id, op: 'files', files: out }, out.filter((f) => f.bytes).map((f) => f.bytes));
    return;
  }
  if (!url) {
    const what = /\.gltf$/i.test(name) ? 'a dropped .gltf brings none of the buffers and images it names'
      : /character\.json$/i.test(name) ? 'a dropped character.json brings none of the package\'s files (drop the package\'s folder instead)'
        : 'a dropped meta.json brings none of the images it names';
    worker.postMessage({ id, op: 'files', error: `${name}: ${what}; serve its folder and open ?scene=${name} (splatforge export-web writes such a folder)` });
    return;
  }
  const out = [];
  for (const [i, f] of files.entries()) {
    try {
      out.push({ path: f.path, bytes: await fetchBytes(objectUrl(f.name, url), f.path, ` (image ${i + 1} of ${files.length})`) });
    } catch (e) {
      out.push({ path: f.path, error: e.message });
    }
  }
  worker.postMessage({ id, op: 'files', files: out }, out.filter((f) => f.bytes).map((f) => f.bytes));
}

const IDENTITY = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0];  // rows 0..2 of the identity transform
const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

// The URL of a file named relative to another (an object's file as the scene writes it, relative to the scene's URL;
// an image relative to its meta.json), each step escaped.
function objectUrl(file, sceneUrl) {
  return new URL(file.split('/').map(encodeURIComponent).join('/'), sceneUrl);
}

// The objects of a scene the worker has read (`info`: sf_web_scene_parse): each file fetched and decoded once, in
// the order the objects name them; objects naming one file share its cloud. A generator object's model is loaded
// once in onnxruntime-web and run for each object naming it, at its model time for scene time `time` (and `cam`,
// the URL's camera, or null), into a cloud of its own, its live centres added to the scene's bounds. A failure
// names the first object that names the file, as the command line's scene loader does.
async function loadObjects(info, sceneUrl, time, w, h, cam) {
  const files = new Map();  // URL -> the objects naming it
  info.objects.forEach((o, i) => {
    const url = objectUrl(o.file, sceneUrl).href;
    if (!files.has(url)) files.set(url, []);
    files.get(url).push(i);
  });
  const clouds = [], cloudOf = [], models = [], instances = [], poses = [], made = [], characters = [], hullsMade = [];
  let k = 0;
  for (const [url, objects] of files) {
    const o = info.objects[objects[0]];
    ++k;
    let at = objects[0];  // the object a failure names
    try {
      if (o.character) {  // a splat character package: its character.json, then the files it names
        const jsonUrl = objectUrl(`${o.file.replace(/\/+$/, '')}/character.json`, sceneUrl);
        const jsonName = `${o.resolved.replace(/\/+$/, '')}/character.json`;
        const bytes = await fetchBytes(jsonUrl, jsonName, files.size > 1 ? ` (file ${k} of ${files.size})` : '');
        const r = await request({ op: 'object', bytes, name: jsonName, objects, character: objects.map((i) => info.objects[i]), time }, [bytes], jsonUrl);
        objects.forEach((i, j) => {
          const oi = info.objects[i];
          const own = j === 0 ? r.cloud : { ...r.cloud, positions: r.cloud.positions.slice(), covariances: r.cloud.covariances.slice(), opacities: r.cloud.opacities.slice(), sh: r.cloud.sh.slice() };
          cloudOf[i] = clouds.length;
          clouds.push(own);  // each object's splats are deformed into slots of its own
          characters.push({ object: i, data: r.character, pose: r.poses[j], toWorld: oi.to_world, toObject: oi.to_object, animated: { name: oi.name, clips: r.info.clips, clip: r.clips[j], speed: oi.speed } });
        });
        const centres = r.cloud.positions.slice();  // the splats at their binding's rest place, for the starting camera
        for (const i of objects) await request({ op: 'scene-points', name: jsonName, object: i, positions: centres, capture: false });
        continue;
      }
      const bytes = await fetchBytes(url, o.resolved, files.size > 1 ? ` (file ${k} of ${files.size})` : '');
      if (o.hull) {  // a static splat hull: the worker keeps one per object, placed by its transform and heading
        const hull = objects.map((i) => {
          const oi = info.objects[i];
          return { mode: oi.mode, heading: oi.heading, toWorld: composeAffine(oi.to_world, headingRows(oi.heading)), toObject: composeAffine(headingRows(-oi.heading), oi.to_object) };
        });
        const camera = cam ? { view: cam.view, fx: cam.fx, fy: cam.fy, cx: cam.cx, cy: cam.cy, width: w, height: h } : null;
        const r = await request({ op: 'object', bytes, name: o.resolved, objects, hull, time, camera }, [bytes], url);
        objects.forEach((i, j) => hullsMade.push({ frame: r.frames[j], toWorld: hull[j].toWorld, toObject: hull[j].toObject, info: r.infos[j] }));
        continue;
      }
      if (o.generator) {  // a neural generator: run by onnxruntime-web, each object at its own model time
        status(`loading the model ${o.resolved} in onnxruntime-web`);
        const model = await openGeneratorModel(bytes, o.resolved, made.length === 0);
        for (const i of objects) {
          at = i;
          const oi = info.objects[i];
          const g = { ...model, time: oi.time, speed: oi.speed, toWorld: oi.to_world, index: made.length, rows: -1, ran: null };
          const run = await firstRun(g, time, cam, w, h);
          await request({ op: 'scene-points', name: o.resolved, object: i, positions: run.centres }, [run.centres.buffer]);
          cloudOf[i] = clouds.length;
          clouds.push(run.cloud);
          made.push({ object: i, g, run });
        }
        continue;
      }
      const gltf = o.gltf ? objects.map((i) => info.objects[i]) : null;
      const r = await request({ op: 'object', bytes, name: o.resolved, objects, gltf, time }, [bytes], url);
      for (const w of r.info.warnings) console.warn(`${o.context}: ${w}`);
      if (r.type === 'model') {  // a glTF model: an instance of it per object, with its pose
        objects.forEach((i, j) => {
          instances.push({ model: models.length, toWorld: info.objects[i].to_world, name: info.objects[i].name, speed: info.objects[i].speed });
          poses.push(r.poses[j]);
        });
        models.push(r.model);
      }
      if (r.cloud) {
        if (digest) await printDigest(o.resolved, r.cloud);
        for (const i of objects) cloudOf[i] = clouds.length;
        clouds.push(r.cloud);
      }
    } catch (e) {
      throw new Error(`${info.objects[e.object !== undefined ? e.object : at].context}: ${e.message}`);
    }
  }
  const splatObjects = [], slotOf = [];
  info.objects.forEach((o, i) => {
    if (cloudOf[i] === undefined) return;
    slotOf[i] = splatObjects.length;
    splatObjects.push({ cloud: cloudOf[i], toWorld: o.to_world, toObject: o.to_object });
  });
  return {
    clouds, objects: splatObjects, models, instances, poses, files: files.size, count: info.objects.length,
    generators: made.map((m) => ({ object: slotOf[m.object], ...m.run.decode })),
    characters: characters.map((c) => ({ object: slotOf[c.object], ...c.data })),
    characterPoses: characters.map((c) => c.pose), characterPlaces: characters.map((c) => ({ toWorld: c.toWorld, toObject: c.toObject })),
    characterAnimated: characters.map((c) => c.animated),
    shown: made.map((m) => m.g), firsts: made.map((m) => m.run.first),
    generatorSpan: made.some((m) => m.g.contract.time) ? GENERATOR_TIME_SPAN : 0,
    hulls: hullsMade,
  };
}

let renderer = null, nav = null, fixedCamera = null, urlBackground = null, background = [0, 0, 0];
let mode = params.get('camera') === 'fly' ? 'fly' : 'orbit';  // the navigator's mode, kept from file to file
// The starting camera at the size it was made for: drawn as it is until the navigator moves or the size changes.
let home = null;
let drawing = null, again = false, loading = false;

// The timeline of animated content (glTF objects with clips): the scene time, playing or paused, its span (the
// longest clip's duration in scene time), and each glTF object's clips and clip (`objects`, in the worker's
// order). Posing happens in the worker for each time shown; a time asked for while a pose is under way waits for
// it (only the latest is posed).
const timeline = { time: 0, playing: false, span: 0, generatorSpan: 0, objects: [], posing: null, wanted: null, last: 0 };

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
  if (home && !nav.moved && home.width === w && home.height === h) return home;
  return nav.camera(w, h);
}

// The frame's figures for the timings line: per pass where the device stamps them, else why not.
function passTimings(s) {
  if (!s.passMs) return `no per-pass GPU timings (${timestampsWhy})`;
  const parts = TIMED_PASSES.filter((p) => p in s.passMs).map((p) => `${p} ${s.passMs[p].toFixed(2)}`);
  const total = Object.values(s.passMs).reduce((a, b) => a + b, 0);
  return `GPU passes (ms): ${parts.join(', ')}; sum ${total.toFixed(2)}`;
}

// Draws the current camera; resolves when the frame of the latest camera is drawn.
function draw() {
  if (!renderer || !renderer.scene) return Promise.resolve();
  if (drawing) { again = true; return drawing; }
  drawing = (async () => {
    try {
      do {
        again = false;
        const cam = currentCamera();
        await runStaleGenerators(cam, timeline.time);
        await refreshHulls(cam, timeline.time);
        const s = await renderer.render(cam, background);
        const over = s.keysWanted > s.keys ? ` (${s.keysWanted - s.keys} keys past the GPU's buffer limit were dropped)` : '';
        $('timings').textContent = `frame ${s.ms.toFixed(1)} ms (submit to done), ${s.splats} splats, ${s.keys} tile keys${over}${s.triangles ? `, ${s.triangles} mesh triangles` : ''}; ${passTimings(s)}`;
      } while (again);
    } catch (e) {
      showError(e.message);
    } finally {
      drawing = null;
    }
  })();
  return drawing;
}

// Opens `name`, whose bytes `bytesPromise` gives: a splat file, or a scene JSON whose files are fetched relative to
// `sceneUrl` (null for a dropped file, which brings no files with it).
// Bumped by every open: the timeline stops, and poses asked for the content shown before are dropped (the worker
// lets go of its models when it opens the next file).
let generation = 0;

// The face layer and look-at the URL asks of a character (?expression=jawOpen:1,eyeBlinkLeft:0.5, ?look-at=x,y,z).
function characterControls() {
  const expression = [];
  if (urlExpression !== null) {
    for (const pair of urlExpression.split(',')) {
      const at = pair.lastIndexOf(':'), weight = Number(pair.slice(at + 1));
      if (at <= 0 || pair.slice(at + 1) === '' || !Number.isFinite(weight)) throw new Error(`URL parameter expression: expected MORPH_TARGET:WEIGHT pairs separated by commas, got '${urlExpression}'`);
      expression.push([pair.slice(0, at), weight]);
    }
  }
  return { expression, lookAt: urlLookAt === null ? null : numbers('look-at', 3) };
}

// Rows 0..2 of a x b for two affine transforms given as rows 0..2 (12 numbers each).
function composeAffine(a, b) {
  const out = new Array(12);
  for (let r = 0; r < 3; ++r)
    for (let c = 0; c < 4; ++c) out[4 * r + c] = a[4 * r] * b[c] + a[4 * r + 1] * b[4 + c] + a[4 * r + 2] * b[8 + c] + (c === 3 ? a[4 * r + 3] : 0);
  return out;
}

// The characters' objects' transforms (a scene's character objects; none for a package opened directly).
let characterPlaces = [];

// Character k's pose for the renderer: its object placed by `toWorld` (rows 0..2; its object's transform)
// times its mesh node's matrix.
function setCharacterPose(k, pose, toWorld = characterPlaces[k] ? characterPlaces[k].toWorld : IDENTITY, toObject = characterPlaces[k] ? characterPlaces[k].toObject : IDENTITY) {
  renderer.setCharacterPose(k, { ...pose, toWorld: composeAffine(toWorld, pose.matrix.slice(0, 12)), toObject: composeAffine(pose.matrix.slice(12, 24), toObject) });
}

async function open(bytesPromise, name, sceneUrl, dropped = null) {
  if (loading) return;
  loading = true;
  generation += 1;
  play(false);
  $('error').textContent = '';
  let keptScene = false;
  try {
    const t0 = performance.now();
    const bytes = await bytesPromise;
    const [w, h] = canvasSize();
    const time = fixedTime !== null ? Number(fixedTime) : 0;
    if (!Number.isFinite(time)) throw new Error(`URL parameter t: expected a number of seconds, got '${fixedTime}'`);
    const { expression, lookAt } = characterControls();
    generators = [];
    const isGenerator = (await request({ op: 'is-generator', name })).generator;
    const fixedView = fixedCamera ? { view: fixedCamera.view, fx: fixedCamera.fx, fy: fixedCamera.fy, cx: fixedCamera.cx, cy: fixedCamera.cy, width: w, height: h } : null;
    hulls = { shown: [], key: null };
    const opened = isGenerator ? { type: 'generator' } : await request({ op: 'open', bytes, name, width: w, height: h, clip: urlClip, time, expression, lookAt, hullMode: urlHullMode, camera: fixedView }, [bytes], sceneUrl, dropped);
    let hullShown = [], hullFrames = [], hullKeyMade = null;
    let scene, camera, described, sceneBackground = null, poses = [], animated = [], characterPoses = [], places = [], opening = [], firsts = [], generatorSpan = 0;
    if (opened.type === 'generator') {  // a neural generator: run by onnxruntime-web, its outputs decoded on the GPU
      status(`loading the model ${name} in onnxruntime-web`);
      progress(undefined);
      const fixed = fixedCamera ? { ...fixedCamera, width: w, height: h } : null;
      ({ scene, camera, described, generators: opening, firsts, span: generatorSpan } = await openGenerator(bytes, name, w, h, time, fixed));
    } else if (opened.type === 'character') {  // a splat character package: its splats, deformed on the GPU each frame
      const info = opened.info;
      scene = {
        clouds: [opened.cloud], objects: [{ cloud: 0, toWorld: IDENTITY, toObject: IDENTITY }],
        characters: [{ object: 0, ...opened.character }],
      };
      characterPoses = [opened.pose];
      animated = [{ name, clips: info.clips, clip: opened.clip, speed: 1 }];
      camera = opened.camera;
      const clip = opened.clip >= 0 ? `, clip ${opened.clip} '${info.clips[opened.clip].name}' of ${info.clips.length}` : ', rest pose';
      const face = expression.length ? `, expression ${expression.map(([t, v]) => `${t} ${v}`).join(', ')}` : '';
      described = `${name}: splat character, ${info.gaussians} gaussians bound to ${info.vertices} vertices (${info.joints} joints, ${info.targets.length} morph targets, skinned on the ${info.gpu_skin ? 'GPU' : 'CPU'})${clip}${face}`;
    } else if (opened.type === 'hull') {  // a splat hull: the frame inputs the engine's buildHullFrame made
      const info = opened.info, made = hullScene(opened.frame);
      scene = made.scene;
      poses = made.poses;
      hullShown = [made.shown];
      hullFrames = [opened.frame];
      camera = opened.camera;
      const drawn = fixedView || { view: camera.slice(0, 12), fx: camera[12], fy: camera[13], cx: camera[14], cy: camera[15], width: w, height: h };
      hullKeyMade = hullKey(drawn, time);
      described = `${name}: splat hull, ${info.core} core and ${info.shell} shell splats, ${info.mode} mode${info.meta ? ', with its meta sidecar' : ''}`;
    } else if (opened.type === 'model') {  // a glTF model: its meshes, posed, and its gaussians
      const info = opened.info;
      scene = {
        clouds: opened.cloud ? [opened.cloud] : [], objects: opened.cloud ? [{ cloud: 0, toWorld: IDENTITY, toObject: IDENTITY }] : [],
        models: [opened.model], instances: [{ model: 0, toWorld: IDENTITY }],
      };
      poses = [opened.pose];
      animated = [{ name, clips: info.clips, clip: opened.clip, speed: 1 }];
      camera = opened.camera;
      const clip = opened.clip >= 0 ? `, clip ${opened.clip} '${info.clips[opened.clip].name}' of ${info.clips.length}` : ', no animation';
      described = `${name}: glTF, ${plural(info.draws.length, 'mesh primitive')} (${info.vertices} vertices)${info.gaussians ? `, ${info.gaussians} gaussians` : ''}${clip}`;
    } else if (opened.type === 'splats') {
      const info = opened.info;
      for (const warning of info.warnings) console.warn(warning);
      if (digest) await printDigest(name, opened.cloud);
      scene = { clouds: [opened.cloud], objects: [{ cloud: 0, toWorld: IDENTITY, toObject: IDENTITY }] };
      camera = opened.camera;
      described = `${name}: ${info.format}${info.version ? ` ${info.version}` : ''}, ${info.gaussians} gaussians, SH degree ${info.sh_degree}`;
    } else {
      keptScene = true;
      if (!sceneUrl) throw new Error(`${name}: a dropped scene JSON brings none of the files it names; serve its folder and open ?scene=${name} (splatforge export-web writes such a folder)`);
      const fixed = fixedCamera ? { ...fixedCamera, width: w, height: h } : null;
      const loaded = await loadObjects(opened.info, sceneUrl, time, w, h, fixed);
      camera = (await request({ op: 'scene-camera', width: w, height: h })).camera;
      keptScene = false;
      scene = loaded;
      poses = loaded.poses;
      animated = loaded.instances.map((inst, i) => ({ name: inst.name, clips: loaded.models[inst.model].clips, clip: poses[i].clip, speed: inst.speed }));
      animated.push(...loaded.characterAnimated);  // the worker's order: the glTF objects, then the characters
      characterPoses = loaded.characterPoses;
      places = loaded.characterPlaces;
      ({ shown: opening, firsts, generatorSpan } = loaded);
      sceneBackground = opened.info.background;
      const gaussians = loaded.objects.reduce((sum, o) => sum + loaded.clouds[o.cloud].count, 0);
      described = `${name}: ${plural(loaded.count, 'object')} from ${plural(loaded.files, 'file')}, ${gaussians} gaussians${loaded.instances.length ? `, ${plural(loaded.instances.length, 'glTF model')}` : ''}${loaded.characters.length ? `, ${plural(loaded.characters.length, 'splat character')}` : ''}${opening.length ? `, ${plural(opening.length, 'neural generator')}` : ''}${loaded.hulls.length ? `, ${plural(loaded.hulls.length, 'splat hull')} (${loaded.hulls.map((x) => x.info.mode).join(', ')})` : ''}${opened.info.camera ? ', the scene\'s camera' : ''}`;
      // The hulls after every other object, each drawn from the frame inputs the worker remakes per camera.
      for (const x of loaded.hulls) {
        hullShown.push(addHull(scene, x.frame, x.toWorld, x.toObject));
        hullFrames.push(x.frame);
      }
    }
    const t1 = performance.now();
    status(described);
    progress(null);
    generators = opening;
    characterPlaces = places;
    renderer.setScene(scene);
    hulls = { shown: hullShown, key: hullKeyMade };
    if (opened.type !== 'hull') poses.forEach((p, i) => renderer.setPose(i, p.draws));
    hullShown.forEach((sh, k) => setHullFrame(k, hullFrames[k]));
    characterPoses.forEach((p, k) => setCharacterPose(k, p));
    firsts.forEach((f, k) => renderer.setGenerated(k, f));
    setTimeline(animated, time, [...poses, ...characterPoses], generatorSpan);
    background = urlBackground || sceneBackground || [0, 0, 0];
    held.clear();
    nav = new Navigator(camera, mode);
    showMode();
    home = { view: camera.slice(0, 12), fx: camera[12], fy: camera[13], cx: camera[14], cy: camera[15], eye: camera.slice(16, 19), width: w, height: h };
    const first = currentCamera();
    await runStaleGenerators(first, time);  // models with camera inputs, for this camera
    await refreshHulls(first, time);  // hulls, for this camera
    const s = await renderer.render(first, background, { capture: passes });
    const t2 = performance.now();
    const timings = `first frame ${s.ms.toFixed(1)} ms, ${s.splats} splats, ${s.keys} tile keys${s.triangles ? `, ${s.triangles} mesh triangles` : ''}; load and decode ${(t1 - t0).toFixed(0)} ms; ${passTimings(s)}`;
    $('timings').textContent = timings;
    log(`FIRST-FRAME ${performance.now().toFixed(0)} ms since the page opened; load and decode ${(t1 - t0).toFixed(0)} ms; first frame ${(t2 - t1).toFixed(0)} ms; ${s.splats} splats, ${s.keys} keys`);
    log(`TIMINGS ${timings}`);
    let shown = first;
    if (input) {
      playInput(input);
      await draw();
      shown = currentCamera();
    }
    if (readback) await printImage(shown);
    if (passes) printPasses(s.passes);
    if (timeline.span > 0 && fixedTime === null && !readback && !passes && !input) play(true);
  } catch (e) {
    if (keptScene) request({ op: 'close' }).catch(() => {});
    generators = [];
    // The worker no longer holds the models of what is still shown: it stays, still, without its timeline.
    if (timeline.objects.length) setTimeline([], timeline.time, []);
    showError(e.message);
  } finally {
    loading = false;
  }
}

// The timeline for the content just opened: `animated` are its glTF objects ({name, clips, clip, speed}), posed
// at scene time `time` (`poses`). Shown where a clip plays.
function setTimeline(animated, time, poses, generatorSpan = 0) {
  play(false);
  timeline.objects = animated;
  timeline.time = time;
  timeline.generatorSpan = generatorSpan;
  timeline.span = Math.max(generatorSpan, ...animated.filter((o) => o.clip >= 0).map((o) => o.clips[o.clip].duration / Math.max(Math.abs(o.speed), 1e-6)));
  $('timeline').style.display = timeline.span > 0 ? 'flex' : 'none';
  $('scrub').max = String(timeline.span);
  const select = $('clip');
  select.replaceChildren();
  const first = animated.findIndex((o) => o.clips.length > 1);
  select.style.display = first >= 0 ? 'inline-block' : 'none';
  select.dataset.object = String(first);
  if (first >= 0) {
    animated[first].clips.forEach((c, i) => select.append(new Option(`${animated.length > 1 ? `${animated[first].name}: ` : ''}${i} '${c.name}' (${c.duration.toFixed(2)} s)`, String(i))));
    select.value = String(animated[first].clip);
  }
  showTime(poses);
}

// The scene time on the scrub bar and, for the first glTF object that plays a clip, that clip's time.
function showTime(poses) {
  $('scrub').value = String(Math.min(timeline.time, timeline.span));
  const i = timeline.objects.findIndex((o) => o.clip >= 0);
  const clip = i >= 0 && poses[i] ? `; clip '${timeline.objects[i].clips[poses[i].clip].name}' at ${poses[i].clipTime.toFixed(3)} s of ${timeline.objects[i].clips[poses[i].clip].duration.toFixed(3)} s` : '';
  $('time').textContent = `t = ${timeline.time.toFixed(3)} s${clip}`;
  $('play').textContent = timeline.playing ? 'pause' : 'play';
}

// Poses every glTF object and character at scene time `time` in the worker and draws the frame (draw() runs the
// generator there first: its time or camera inputs changed); while a pose is under way, the latest time asked for
// waits for it (only the latest is posed and run).
function poseAt(time) {
  if (loading) return null;  // the worker is opening another file
  timeline.time = time;
  if (timeline.posing) { timeline.wanted = time; return timeline.posing; }
  const shown = generation;
  timeline.posing = (async () => {
    try {
      for (let t = time; t !== null && shown === generation; t = timeline.wanted) {
        timeline.wanted = null;
        const { poses, characters } = await request({ op: 'pose', time: t });
        if (shown !== generation) break;  // another file opened meanwhile
        poses.forEach((p, i) => renderer.setPose(i, p.draws));
        characters.forEach((p, k) => setCharacterPose(k, p));  // each placed by its object's transform
        showTime([...poses, ...characters]);
        await draw();
      }
    } catch (e) {
      play(false);
      showError(e.message);
    } finally {
      timeline.posing = null;
    }
  })();
  return timeline.posing;
}

// Plays (the scene time following the page's clock, wrapping at the span) or pauses.
function play(on) {
  timeline.playing = on && timeline.span > 0;
  $('play').textContent = timeline.playing ? 'pause' : 'play';
  if (!timeline.playing) return;
  timeline.last = performance.now();
  const step = (now) => {
    if (!timeline.playing) return;
    // anim::kMaxFrameStep: a stall does not jump; a frame's timestamp may precede the moment play began
    const dt = Math.max(0, Math.min((now - timeline.last) / 1000, 1 / 15));
    timeline.last = now;
    let t = timeline.time + dt;
    if (t > timeline.span) t -= timeline.span;
    if (!timeline.posing) poseAt(t); else timeline.time = t;
    requestAnimationFrame(step);
  };
  requestAnimationFrame(step);
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

// For tests (?digest=1): a decoded file's gaussians as the page uploads them, as a line DECODED name count SHA-256
// of the little-endian floats of its positions (3 a splat), covariances (6), opacities and SH coefficients in turn.
async function printDigest(name, cloud) {
  const parts = [cloud.positions, cloud.covariances, cloud.opacities, cloud.sh];
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    bytes.set(new Uint8Array(p.buffer, p.byteOffset, p.byteLength), at);
    at += p.byteLength;
  }
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  log(`DECODED ${name} ${cloud.count} ${Array.from(hash, (b) => b.toString(16).padStart(2, '0')).join('')}`);
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

// The navigator's mode on its button.
function showMode() {
  $('mode').textContent = mode === 'fly' ? 'fly camera: drag to look, W A S D Q E to move, wheel for speed (F: orbit)' : 'orbit camera: drag to turn, wheel to zoom (F: fly)';
}

function toggleMode() {
  mode = mode === 'orbit' ? 'fly' : 'orbit';
  if (nav) nav.toggle();
  showMode();
}

// The fly keys held down, and the clock's time up to which their motion is counted. The clock is the page's, or
// under ?input= one that moves only when the events played say so (playInput), so that a test knows how far a key
// held for a time flies.
const held = new Set();
let virtualSeconds = input ? 0 : null;
const clock = () => (virtualSeconds === null ? performance.now() / 1000 : virtualSeconds);
let heldSince = 0;
function flyHeld() {
  const now = clock();
  if (held.size && nav && !fixedCamera) nav.fly(held, now - heldSince);
  heldSince = now;
}
function flyLoop() {
  if (!held.size) return;
  flyHeld();
  draw();
  requestAnimationFrame(flyLoop);
}

function controls() {
  showMode();
  let dragging = null;
  canvas.addEventListener('pointerdown', (e) => {
    dragging = { x: e.clientX, y: e.clientY };
    if (e.isTrusted) canvas.setPointerCapture(e.pointerId);  // a played event's pointer cannot be captured
  });
  canvas.addEventListener('pointerup', () => { dragging = null; });
  canvas.addEventListener('pointermove', (e) => {
    if (!dragging || !nav || fixedCamera) return;
    nav.drag(e.clientX - dragging.x, e.clientY - dragging.y);
    dragging = { x: e.clientX, y: e.clientY };
    draw();
  });
  canvas.addEventListener('wheel', (e) => {
    if (!nav || fixedCamera) return;
    e.preventDefault();
    nav.wheel(e.deltaY);
    draw();
  }, { passive: false });
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.code === 'KeyF' && !e.repeat) {
      flyHeld();
      toggleMode();
      draw();
    } else if (e.code in FLY_KEYS && !held.has(e.code)) {
      flyHeld();
      held.add(e.code);
      if (held.size === 1) requestAnimationFrame(flyLoop);
    }
  });
  document.addEventListener('keyup', (e) => {
    if (!held.has(e.code)) return;
    flyHeld();
    held.delete(e.code);
    draw();
  });
  window.addEventListener('blur', () => { flyHeld(); held.clear(); });  // the key-ups go elsewhere
  $('mode').addEventListener('click', () => { toggleMode(); draw(); });
  $('play').addEventListener('click', () => play(!timeline.playing));
  $('scrub').addEventListener('input', () => { play(false); poseAt(Number($('scrub').value)); });
  $('clip').addEventListener('change', async () => {
    if (loading) return;
    const object = Number($('clip').dataset.object), clip = Number($('clip').value);
    await request({ op: 'clip', object, clip });  // the glTF objects, then the characters
    timeline.objects[object].clip = clip;
    timeline.span = Math.max(timeline.generatorSpan || 0, ...timeline.objects.filter((o) => o.clip >= 0).map((o) => o.clips[o.clip].duration / Math.max(Math.abs(o.speed), 1e-6)));
    $('scrub').max = String(timeline.span);
    poseAt(Math.min(timeline.time, timeline.span));
  });
  new ResizeObserver(() => draw()).observe(canvas);
  document.addEventListener('dragover', (e) => { e.preventDefault(); document.body.classList.add('dragging'); });
  document.addEventListener('dragleave', () => document.body.classList.remove('dragging'));
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    document.body.classList.remove('dragging');
    const item = e.dataTransfer.items && e.dataTransfer.items[0];
    const entry = item && item.webkitGetAsEntry ? item.webkitGetAsEntry() : null;
    if (entry && entry.isDirectory) {  // a folder: a character package (its character.json and files)
      fixedCamera = null;
      openDroppedFolder(entry);
      return;
    }
    const file = e.dataTransfer.files[0];
    if (file) { fixedCamera = null; open(readDropped(file), file.name, null); }
  });
}

// A dropped folder's files (FileSystemDirectoryEntry), by their paths inside it.
async function folderFiles(entry, prefix = '', out = new Map()) {
  const reader = entry.createReader();
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (!batch.length) return out;
    for (const e of batch) {
      if (e.isDirectory) await folderFiles(e, `${prefix}${e.name}/`, out);
      else out.set(`${prefix}${e.name}`, await new Promise((resolve, reject) => e.file(resolve, reject)));
    }
  }
}

// Opens a dropped folder holding a character package: its character.json, the files it names read from the folder.
async function openDroppedFolder(entry) {
  try {
    const files = await folderFiles(entry);
    const json = files.get('character.json');
    if (!json) throw new Error(`${entry.name}/character.json: file is missing (a character package is a directory holding character.json)`);
    await open(readDropped(json), `${entry.name}/character.json`, null, new Map([...files].map(([k, v]) => [k, v])));
  } catch (e) {
    showError(e.message);
  }
}

// Plays `script` (?input=, for tests) on the page: steps separated by commas, each dispatched as the browser's own
// events would be and followed by a line CAMERA step mode speed view (12 numbers) intrinsics (fx, fy, cx, cy)
// size (W, H) eye (x, y, z): the camera the page draws then. Steps: key:CODE (pressed and released; CODE as
// KeyboardEvent.code), down:CODE, up:CODE, wait:SECONDS (the clock moves on), drag:DX:DY (the mouse dragged on the
// canvas by DX, DY pixels), wheel:DY.
function playInput(script) {
  const rect = canvas.getBoundingClientRect(), x = rect.left + rect.width / 2, y = rect.top + rect.height / 2;
  const key = (type, code) => document.dispatchEvent(new KeyboardEvent(type, { code, key: code.replace(/^Key/, '').toLowerCase(), bubbles: true }));
  const pointer = (type, px, py) => canvas.dispatchEvent(new PointerEvent(type, { clientX: px, clientY: py, pointerId: 1, pointerType: 'mouse', isPrimary: true, buttons: type === 'pointerup' ? 0 : 1, bubbles: true }));
  const steps = script.split(',');
  for (let i = 0; i < steps.length; ++i) {
    const [what, a, b] = steps[i].split(':');
    if (what === 'key') { key('keydown', a); key('keyup', a); }
    else if (what === 'down') key('keydown', a);
    else if (what === 'up') key('keyup', a);
    else if (what === 'wait') virtualSeconds += Number(a);
    else if (what === 'drag') { pointer('pointerdown', x, y); pointer('pointermove', x + Number(a), y + Number(b)); pointer('pointerup', x + Number(a), y + Number(b)); }
    else if (what === 'wheel') canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: Number(a), clientX: x, clientY: y, bubbles: true, cancelable: true }));
    else throw new Error(`URL parameter input: unknown step '${steps[i]}'`);
    const c = currentCamera();
    log(`CAMERA ${i} ${mode} ${nav.speed} view ${c.view.join(',')} intrinsics ${[c.fx, c.fy, c.cx, c.cy].join(',')} size ${c.width},${c.height} eye ${c.eye.join(',')}`);
  }
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
    let name = await sceneName();
    if (name && name.endsWith('/')) name += 'character.json';  // a character package's folder
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
