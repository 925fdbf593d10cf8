// The frame on WebGPU: the passes of the Vulkan frame in WGSL (web/shaders/), with the same math as the CPU
// reference (render/cpu_renderer.cpp): the neural generators' outputs decoded into their slots (neural.wgsl),
// preprocess of every object's splats (each placed by its transform), one
// global sort of (tile, depth) keys over every splat of the frame, tile ranges, the glTF meshes rasterised with a
// depth test into a layer of colour, coverage and view depth (mesh.wgsl, a render pass), the 16x16 tile raster
// compositing the splats with that layer per pixel; then the image is shown in the canvas. No pass waits on the host: the key count, the sort's sizes and its dispatches are
// computed on the GPU (keys.wgsl's setup pass). Where the adapter offers `timestamp-query`, each stage of the frame
// (TIMED_PASSES) is a pass of its own whose start and end the GPU stamps; the figures come back with the frame's
// counters. For the tests (?passes=1), a frame can also keep every pass's output buffers for the host to read
// (render(..., {capture: true})).

const SHADERS = ['common', 'neural', 'deform', 'preprocess', 'scan', 'keys', 'radix', 'raster', 'mesh', 'blit'];
const FRAME_BYTES = 128;  // struct Frame in common.wgsl
const OBJECT_BYTES = 128; // struct Object in common.wgsl
const PROJ_BYTES = 48;    // struct Proj in common.wgsl
const BLOCK = 1024;       // keys per sort block, elements per scan block
const MAX_ROW = 32768;    // workgroups along x of a 1D pass; more go to y
const CONTROL_WORDS = 32; // keys.wgsl's control[]
const MESH_DRAW_BYTES = 176;  // struct MeshDraw in mesh.wgsl
const MESH_FLAGS = { normals: 1, uvs: 2, colors: 4, texture: 8, unlit: 16 };  // MESH_HAS_*, MESH_UNLIT in mesh.wgsl
const DEFORM_BYTES = 32;  // struct Deform in deform.wgsl
const DECODE_BYTES = 48;  // struct Decode in neural.wgsl
const SKIN_FLAGS = { skinned: 2, eight: 8 };  // SF_SKIN_FLAG_* (deform/deform_shared.h)
// The frame's stages, each one pass (compute, and the canvas blit a render pass), timed where the adapter can.
// generate: the neural generators' outputs decoded into their slots (a frame without generators has none); deform: the splat characters' skin and splat deform passes (a frame without characters has none); scan: the touched counts' prefix sum and the setup pass (the key count, the sort's sizes and dispatches);
// keys: the emit pass; sort: every radix pass (histogram, its scan, scatter); meshes: the mesh layer's render pass.
export const TIMED_PASSES = ['generate', 'deform', 'preprocess', 'scan', 'keys', 'sort', 'ranges', 'meshes', 'raster', 'blit'];

export class RendererError extends Error {}

async function loadShaders(base) {
  const texts = await Promise.all(SHADERS.map(async (name) => {
    const r = await fetch(new URL(`shaders/${name}.wgsl`, base));
    if (!r.ok) throw new RendererError(`shaders/${name}.wgsl: HTTP ${r.status}`);
    return r.text();
  }));
  return Object.fromEntries(SHADERS.map((n, i) => [n, texts[i]]));
}

// A WebGPU device with the adapter's storage limits (the sort's key buffers grow past the defaults) and, where the
// adapter offers it and `timestamps` is true, `timestamp-query` (per-pass timings); `timestamps` in the answer says
// whether the device has it, `timestampsWhy` why not.
export async function openDevice({ timestamps = true } = {}) {
  if (!navigator.gpu) throw new RendererError('WebGPU is not available in this browser (navigator.gpu is missing; see docs/web.md for the browsers and flags that have it)');
  let adapter = await navigator.gpu.requestAdapter();
  if (!adapter) adapter = await navigator.gpu.requestAdapter({ forceFallbackAdapter: true });
  if (!adapter) throw new RendererError('WebGPU has no adapter here (no GPU and no fallback adapter; see docs/web.md)');
  const want = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxStorageBuffersPerShaderStage', 'maxComputeWorkgroupStorageSize'];
  const requiredLimits = {};
  for (const k of want) requiredLimits[k] = adapter.limits[k];
  let device = null, timestampsWhy = '';
  if (!timestamps) timestampsWhy = 'not asked for (timestamps=0)';
  else if (!adapter.features.has('timestamp-query')) timestampsWhy = 'the adapter has no timestamp-query';
  else {
    try {
      device = await adapter.requestDevice({ requiredLimits, requiredFeatures: ['timestamp-query'] });
    } catch (e) {
      timestampsWhy = `the device refused timestamp-query (${e.message})`;
    }
  }
  if (!device) device = await adapter.requestDevice({ requiredLimits });
  const info = adapter.info || {};
  const name = [info.vendor, info.architecture, info.description].filter(Boolean).join(' ') || 'unknown adapter';
  return { device, adapterName: name, timestamps: device.features.has('timestamp-query'), timestampsWhy };
}

function groups1d(n) {  // [x, y] workgroups for n workgroups of a 1D pass
  return n <= MAX_ROW ? [Math.max(n, 0), 1] : [MAX_ROW, Math.ceil(n / MAX_ROW)];
}

function bitWidth(v) { return v === 0 ? 1 : 32 - Math.clz32(v); }

export class Renderer {
  static async create(device, canvas, baseUrl) {
    const r = new Renderer(device, canvas);
    await r.init(baseUrl);
    return r;
  }

  constructor(device, canvas) {
    this.device = device;
    this.canvas = canvas;
    this.scene = null;
    this.size = null;
    this.keyCapacity = 0;
    this.stats = { keys: 0, keysWanted: 0 };
    this.characters = [];
    this.generators = [];
    this.queue = Promise.resolve();  // frames and read-backs, one after another
  }

  async init(baseUrl) {
    const src = await loadShaders(baseUrl);
    const d = this.device;
    const module = (name) => d.createShaderModule({ code: (name === 'blit' ? '' : src.common) + '\n' + src[name], label: name });
    const compute = (name, entry) => d.createComputePipeline({ layout: 'auto', compute: { module: module(name), entryPoint: entry }, label: `${name}:${entry}` });
    d.pushErrorScope('validation');
    this.pipelines = {
      decodeGenerated: compute('neural', 'decode'),
      skin: compute('deform', 'skin'),
      deformSplats: compute('deform', 'deform_splats'),
      preprocess: compute('preprocess', 'main'),
      scanBlocks: compute('scan', 'scan_blocks'),
      scanAdd: compute('scan', 'scan_add'),
      setup: compute('keys', 'setup'),
      emit: compute('keys', 'emit'),
      histogram: compute('radix', 'histogram'),
      scatter: compute('radix', 'scatter'),
      ranges: compute('raster', 'tile_ranges'),
      raster: compute('raster', 'raster'),
    };
    this.format = navigator.gpu.getPreferredCanvasFormat();
    const blit = module('blit');
    this.pipelines.blit = d.createRenderPipeline({
      layout: 'auto', vertex: { module: blit, entryPoint: 'vs' },
      fragment: { module: blit, entryPoint: 'fs', targets: [{ format: this.format }] }, primitive: { topology: 'triangle-list' },
    });
    const mesh = module('mesh');
    this.pipelines.mesh = d.createRenderPipeline({
      layout: 'auto', vertex: { module: mesh, entryPoint: 'vs' },
      fragment: { module: mesh, entryPoint: 'fs', targets: [{ format: 'rgba32float' }, { format: 'r32float' }] },
      primitive: { topology: 'triangle-list', cullMode: 'none' },
      depthStencil: { format: 'depth32float', depthWriteEnabled: true, depthCompare: 'greater' },
    });
    const err = await d.popErrorScope();
    if (err) throw new RendererError(`a WGSL pass did not compile: ${err.message}`);
    this.context = this.canvas.getContext('webgpu');
    this.context.configure({ device: d, format: this.format, alphaMode: 'opaque' });
    this.frameBuffer = d.createBuffer({ size: FRAME_BYTES, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.shiftBuffers = [];
    for (let s = 0; s < 64; s += 8) {
      const b = d.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      d.queue.writeBuffer(b, 0, new Uint32Array([s, 0, 0, 0]));
      this.shiftBuffers.push(b);
    }
    this.levelBuffers = [];
    for (let l = 0; l < 8; ++l) {
      const b = d.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      d.queue.writeBuffer(b, 0, new Uint32Array([l, 0, 0, 0]));
      this.levelBuffers.push(b);
    }
    this.control = d.createBuffer({ size: CONTROL_WORDS * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.INDIRECT | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    this.controlRead = d.createBuffer({ size: CONTROL_WORDS * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    this.controlReadBusy = false;
    // Per-pass timings: a begin and an end stamp per stage, resolved after the frame and read with its counters.
    this.timestamps = d.features.has('timestamp-query');
    if (this.timestamps) {
      const count = 2 * TIMED_PASSES.length;
      this.querySet = d.createQuerySet({ type: 'timestamp', count });
      this.queryResolve = d.createBuffer({ size: count * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
      this.queryRead = d.createBuffer({ size: count * 8, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    }
  }

  // A buffer of at least 128 bytes (a frame without splats binds its empty arrays, each at least one element of
  // the largest struct, Object, long).
  buffer(bytes, usage, label) {
    return this.device.createBuffer({ size: Math.max(OBJECT_BYTES, Math.ceil(bytes / 4) * 4), usage, label });
  }

  bind(pipeline, entries) {
    return this.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: entries.map(([binding, resource]) => ({ binding, resource: resource instanceof GPUBuffer ? { buffer: resource } : resource })),
    });
  }

  // The scene: `clouds`, the decoded files (web/decode_worker.js: positions (3 per splat), covariances (6),
  // opacities, SH (3 (degree + 1)^2 per splat) and their flags), and `objects`, each {cloud: an index into clouds,
  // toWorld, toObject: rows 0..2 of object_to_world and of its inverse, 12 numbers each}. Objects of one file share
  // its uploaded splats; each has its own slots in the frame, in order (as the Vulkan frame gives them).
  //
  // `models` are the glTF models' drawn primitives (web/decode_worker.js: per draw its vertex count, indices or
  // null, UVs and linear colours or null, the texture's RGBA8 texels or null, and the info's base colour and
  // texture), `instances` the glTF objects drawing them ({model: an index into models, toWorld}); each
  // instance's pose comes by setPose.
  //
  // `characters` are the splat characters ({object: an index into objects, whose cloud is the character's splats
  // alone, and the static inputs of its deform: bindings (17 words a splat, the bindings.bin records), indices,
  // vertexCount, jointCount, and for the GPU skin pass (gpuSkin) rest, joints, weights, morphDeltas, targets,
  // eight}); each frame's pose comes by setCharacterPose, and the frame deforms their splats before preprocess.
  //
  // `generators` are the neural generators ({object: an index into objects, whose cloud holds the model's N rows
  // (its values are overwritten each frame), rows, channels (48, 3 or 4), colourIsSh, gaussF16, colourF16 (the
  // outputs' element types), countKind (0: no count tensor read, liveStatic rows live; 1: int32; 2: int64),
  // liveStatic}); each run's raw outputs come by setGenerated, and the frame decodes them into the slots before
  // preprocess (shaders/neural.wgsl).
  setScene({ clouds, objects, models = [], instances = [], characters = [], generators = [] }) {
    const d = this.device;
    const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    const limit = d.limits.maxStorageBufferBindingSize;
    const fits = (bytes, what) => {
      if (bytes > limit) throw new RendererError(`the scene's ${what} take ${(bytes / 1048576).toFixed(0)} MB, past this GPU's storage buffer limit of ${(limit / 1048576).toFixed(0)} MB`);
    };
    const starts = [];
    let splats = 0, shFloats = 0;
    for (const c of clouds) {
      starts.push({ first: splats, sh: shFloats });
      splats += c.count;
      shFloats += c.sh.length;
    }
    let slots = 0;
    for (const o of objects) slots += clouds[o.cloud].count;
    fits(splats * 24, 'covariances');
    fits(shFloats * 4, 'SH coefficients');
    fits(slots * PROJ_BYTES, 'projected splats');
    const upload = (key, floats) => {
      const b = this.buffer(floats * 4, S, key);
      let at = 0;
      for (const c of clouds) {
        const a = c[key];
        d.queue.writeBuffer(b, at, a.buffer, a.byteOffset, a.byteLength);
        at += a.byteLength;
      }
      return b;
    };
    const table = new ArrayBuffer(OBJECT_BYTES * Math.max(objects.length, 1)), f = new Float32Array(table), u = new Uint32Array(table);
    let slot = 0;
    const slots_ = [];  // each object's first slot
    objects.forEach((o, j) => {
      const c = clouds[o.cloud], w = j * OBJECT_BYTES / 4, degree = c.shDegree;
      f.set(o.toWorld, w);
      f.set(o.toObject, w + 12);
      u.set([slot, c.count, starts[o.cloud].first, starts[o.cloud].sh, 3 * (degree + 1) * (degree + 1), degree,
             (c.antialiased ? 1 : 0) | (c.linear ? 2 : 0) | (o.sortDepth ? 4 : 0)], w + 24);
      f[w + 31] = c.screenFilter;
      slots_.push(slot);
      slot += c.count;
    });
    if (this.scene) for (const k of ['positions', 'covariances', 'opacities', 'sh', 'objects', 'sortDepths']) this.scene[k].destroy();
    const objectBuffer = this.buffer(table.byteLength, S, 'objects');
    d.queue.writeBuffer(objectBuffer, 0, table);
    this.scene = {
      count: slots, objectCount: objects.length,
      positions: upload('positions', 3 * splats), covariances: upload('covariances', 6 * splats),
      opacities: upload('opacities', splats), sh: upload('sh', shFloats), objects: objectBuffer,
      sortDepths: this.buffer(slots * 4, S, 'sort depths'), cloudStarts: starts, objectSlots: slots_,
    };
    this.size = null;  // rebuilt for the new count
    this.keyCapacity = Math.max(1 << 20, 4 * slots);
    this.objectTable = table;
    this.setMeshes(models, instances);
    this.setCharacters(characters.map((ch) => ({ ...ch, first: starts[objects[ch.object].cloud].first, count: clouds[objects[ch.object].cloud].count })));
    this.setGenerators(generators.map((g) => ({ ...g, first: starts[objects[g.object].cloud].first, shBase: starts[objects[g.object].cloud].sh, shStride: 3 * (clouds[objects[g.object].cloud].shDegree + 1) ** 2 })));
  }

  // Cloud k's splats replaced by a frame's (the same count): a splat hull's gaussians, lit for this frame.
  setCloudData(k, cloud) {
    const q = this.device.queue, sc = this.scene, st = sc.cloudStarts[k];
    const write = (b, at, a) => q.writeBuffer(b, at, a.buffer, a.byteOffset, a.byteLength);
    write(sc.positions, 12 * st.first, cloud.positions);
    write(sc.covariances, 24 * st.first, cloud.covariances);
    write(sc.opacities, 4 * st.first, cloud.opacities);
    write(sc.sh, 4 * st.sh, cloud.sh);
  }

  // Object j's sort depths, one per slot (RenderObject::sort_depth; the object was given with sortDepth).
  setSortDepths(j, depths) {
    this.device.queue.writeBuffer(this.scene.sortDepths, 4 * this.scene.objectSlots[j], depths.buffer, depths.byteOffset, depths.byteLength);
  }

  // Instance i's draw k's vertex colours replaced (the same count): a splat hull's core, lit for this frame.
  setMeshColors(i, k, colors) {
    this.device.queue.writeBuffer(this.meshes[i].draws[k].colors, 0, colors.buffer, colors.byteOffset, colors.byteLength);
  }

  // The generators' raw output buffers (as the runtime wrote the tensors), their decode parameters and bind groups,
  // writing into the scene's arrays.
  setGenerators(generators) {
    const d = this.device, S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    if (this.generatorBuffers) for (const b of this.generatorBuffers) b.destroy();
    const made = [];
    const make = (bytes, label, usage = S) => { const b = this.buffer(bytes, usage, label); made.push(b); return b; };
    const sc = this.scene;
    this.generators = generators.map((g, k) => {
      const c = {
        ...g, posed: false,
        params: make(DECODE_BYTES, `generator ${k} decode`, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST),
        gauss: make(g.rows * 10 * (g.gaussF16 ? 2 : 4), `generator ${k} gaussians`),
        colour: make(g.rows * g.channels * (g.colourF16 ? 2 : 4), `generator ${k} colours`),
        count: make(8, `generator ${k} count`),
      };
      d.queue.writeBuffer(c.params, 0, new Uint32Array([g.rows, g.channels, g.colourIsSh ? 1 : 0, g.shStride, g.first, g.shBase,
        g.gaussF16 ? 1 : 0, g.colourF16 ? 1 : 0, g.countKind, g.liveStatic, 0x7fc00000, 0]));
      c.bind = this.bind(this.pipelines.decodeGenerated, [[0, c.params], [1, c.gauss], [2, c.colour], [3, c.count], [4, sc.positions],
        [5, sc.covariances], [6, sc.opacities], [7, sc.sh]]);
      return c;
    });
    this.generatorBuffers = made;
  }

  // Generator `k`'s run: its outputs' raw bytes (ArrayBuffers: the gaussians, the colours, the count tensor or
  // null), uploaded as they are for the frame's decode pass, and its live rows (the decode's live_static, where it
  // reads no count tensor).
  setGenerated(k, { gauss, colour, count, live }) {
    const q = this.device.queue, g = this.generators[k];
    const write = (b, bytes) => {
      const padded = new Uint8Array(Math.ceil(bytes.byteLength / 4) * 4);  // writeBuffer takes whole words
      padded.set(new Uint8Array(bytes));
      q.writeBuffer(b, 0, padded);
    };
    write(g.gauss, gauss);
    write(g.colour, colour);
    if (count) write(g.count, count);
    if (!g.countKind && live !== undefined && live !== g.liveStatic) {
      g.liveStatic = live;
      q.writeBuffer(g.params, 36, new Uint32Array([live]));  // Decode.live_static
    }
    g.posed = true;
  }

  // The characters' deform inputs: static buffers (bindings, triangle list, bind-pose mesh, influences, morph
  // deltas), per-frame ones (palette, dual quaternions, morph weights, the deformed mesh) and the bind groups of
  // the skin and deform passes, writing into the scene's position and covariance arrays.
  setCharacters(characters) {
    const d = this.device, S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    if (this.characterBuffers) for (const b of this.characterBuffers) b.destroy();
    const made = [];
    const make = (bytes, label, usage = S) => { const b = this.buffer(bytes, usage, label); made.push(b); return b; };
    const upload = (array, label) => {
      const b = make(array ? array.byteLength : 16, label);
      if (array) d.queue.writeBuffer(b, 0, array.buffer, array.byteOffset, array.byteLength);
      return b;
    };
    const sc = this.scene;
    this.characters = characters.map((ch, k) => {
      const c = {
        ...ch, params: make(DEFORM_BYTES, `character ${k} deform`, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST),
        bindings: upload(ch.bindings, `character ${k} bindings`), indices: upload(ch.indices, `character ${k} triangles`),
        rest: upload(ch.gpuSkin ? ch.rest : null, `character ${k} bind pose`), joints: upload(ch.gpuSkin ? ch.joints : null, `character ${k} joints`),
        weights: upload(ch.gpuSkin ? ch.weights : null, `character ${k} weights`),
        morphDeltas: upload(ch.gpuSkin && ch.targets ? ch.morphDeltas : null, `character ${k} morph deltas`),
        morphWeights: make(4 * Math.max(ch.targets, 1), `character ${k} morph weights`),
        palette: make(48 * Math.max(ch.jointCount, 1), `character ${k} palette`),
        dq: make(80 * Math.max(ch.jointCount, 1), `character ${k} dual quaternions`),
        mesh: make(12 * ch.vertexCount, `character ${k} deformed mesh`), posed: false,
      };
      const P = this.pipelines;
      c.skinBind = ch.gpuSkin ? this.bind(P.skin, [[0, c.params], [1, c.rest], [2, c.joints], [3, c.weights], [4, c.morphDeltas], [5, c.morphWeights], [6, c.palette], [7, c.dq], [8, c.mesh]]) : null;
      c.deformBind = this.bind(P.deformSplats, [[0, c.params], [6, c.palette], [8, c.mesh], [9, c.bindings], [10, c.indices], [11, sc.positions], [12, sc.covariances]]);
      return c;
    });
    this.characterBuffers = made;
  }

  // Character `k`'s pose (web/decode_worker.js): this frame's palette (12 floats a joint), dual quaternions (for
  // dual-quaternion skinning, else empty), morph weights, the deformed mesh (vertices, where it is not skinned on
  // the GPU), the skinning method (dqs), and its object's transforms this frame (toWorld, toObject: rows 0..2 of
  // the object's transform times its mesh node's matrix, and of the inverse).
  setCharacterPose(k, { palette, dq, morphWeights, vertices, dqs, toWorld, toObject }) {
    const q = this.device.queue, c = this.characters[k];
    const write = (b, a) => { if (a && a.length) q.writeBuffer(b, 0, a.buffer, a.byteOffset, a.byteLength); };
    write(c.palette, palette);
    write(c.dq, dq);
    write(c.morphWeights, morphWeights);
    if (!c.gpuSkin) write(c.mesh, vertices);
    const flags = c.jointCount > 0 ? SKIN_FLAGS.skinned | (c.eight ? SKIN_FLAGS.eight : 0) : 0;
    q.writeBuffer(c.params, 0, new Uint32Array([c.vertexCount, c.targets, dqs ? 1 : 0, flags, c.count, c.first, 0, 0]));
    const f = new Float32Array(this.objectTable), at = c.object * OBJECT_BYTES / 4;
    f.set(toWorld, at);
    f.set(toObject, at + 12);
    q.writeBuffer(this.scene.objects, c.object * OBJECT_BYTES, this.objectTable, c.object * OBJECT_BYTES, OBJECT_BYTES);
    c.posed = true;
  }

  // The glTF meshes: static buffers per model's draw (indices, UVs, colours, texels), and per instance's draw its
  // posed positions and normals, its uniform block and bind group.
  setMeshes(models, instances) {
    const d = this.device, S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    if (this.meshBuffers) for (const b of this.meshBuffers) b.destroy();
    const made = [];
    const make = (bytes, usage, label) => { const b = this.buffer(bytes, usage, label); made.push(b); return b; };
    const upload = (array, usage, label) => {
      const b = make(array ? array.byteLength : 16, usage, label);
      if (array) d.queue.writeBuffer(b, 0, array.buffer, array.byteOffset, array.byteLength);
      return b;
    };
    const statics = models.map((m, mi) => m.draws.map((draw, di) => ({
      draw,
      indices: draw.indices ? upload(draw.indices, GPUBufferUsage.INDEX | GPUBufferUsage.COPY_DST, `mesh ${mi}.${di} indices`) : null,
      uvs: upload(draw.texture ? draw.uvs : null, S, `mesh ${mi}.${di} uvs`),
      colors: upload(draw.colors, S, `mesh ${mi}.${di} colours`),
      texels: upload(draw.texture ? draw.texels : null, S, `mesh ${mi}.${di} texels`),
    })));
    this.meshes = instances.map((inst) => ({
      toWorld: inst.toWorld,
      draws: statics[inst.model].map((st, di) => {
        const n = st.draw.vertices;
        const positions = make(12 * n, S, `mesh draw ${di} positions`);
        const normals = make(st.draw.normals ? 12 * n : 16, S, `mesh draw ${di} normals`);
        const uniform = make(MESH_DRAW_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, `mesh draw ${di}`);
        const flags = (st.draw.normals ? MESH_FLAGS.normals : 0) | (st.draw.colors ? MESH_FLAGS.colors : 0) |
          (st.draw.texture ? MESH_FLAGS.uvs | MESH_FLAGS.texture : 0) | (st.draw.unlit ? MESH_FLAGS.unlit : 0);
        return {
          ...st, positions, normals, uniform, flags, matrix: null,
          bind: this.bind(this.pipelines.mesh, [[0, uniform], [1, positions], [2, normals], [3, st.uvs], [4, st.colors], [5, st.texels]]),
        };
      }),
    }));
    this.meshBuffers = made;
    this.triangles = this.meshes.reduce((sum, m) => sum + m.draws.reduce((t, dr) => t + (dr.draw.indices ? dr.draw.indices.length : dr.draw.vertices) / 3, 0), 0);
  }

  // Instance `i`'s pose: per draw its posed positions and normals (3 floats a vertex, in its mesh node's space)
  // and that node's model matrix (16 floats, row-major).
  setPose(i, draws) {
    const q = this.device.queue;
    this.meshes[i].draws.forEach((dr, k) => {
      const p = draws[k];
      q.writeBuffer(dr.positions, 0, p.positions.buffer, p.positions.byteOffset, p.positions.byteLength);
      if (p.normals) q.writeBuffer(dr.normals, 0, p.normals.buffer, p.normals.byteOffset, p.normals.byteLength);
      dr.matrix = p.matrix;
    });
  }

  // Each mesh draw's uniform block for `camera`: object_to_view = world_to_camera x object_to_world (the
  // instance's transform times its mesh node's model matrix) and the inverse transpose of its linear part, as
  // mesh_raster.cpp's viewVertices takes them.
  writeMeshDraws(camera) {
    const rows4 = (r) => [[r[0], r[1], r[2], r[3]], [r[4], r[5], r[6], r[7]], [r[8], r[9], r[10], r[11]], [0, 0, 0, 1]];
    const mul = (a, b) => a.map((row) => [0, 1, 2, 3].map((j) => row.reduce((sum, v, k) => sum + v * b[k][j], 0)));
    const view = rows4(camera.view);
    for (const inst of this.meshes) {
      const world = mul(view, rows4(inst.toWorld));
      for (const dr of inst.draws) {
        if (!dr.matrix) continue;
        const m = dr.matrix;
        const toView = mul(world, [m.slice(0, 4), m.slice(4, 8), m.slice(8, 12), m.slice(12, 16)]);
        const [a, b, c] = toView;
        // inverse transpose of the 3x3 linear part: the cofactor matrix over the determinant
        const cof = [
          [b[1] * c[2] - b[2] * c[1], b[2] * c[0] - b[0] * c[2], b[0] * c[1] - b[1] * c[0]],
          [c[1] * a[2] - c[2] * a[1], c[2] * a[0] - c[0] * a[2], c[0] * a[1] - c[1] * a[0]],
          [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]],
        ];
        const det = a[0] * cof[0][0] + a[1] * cof[0][1] + a[2] * cof[0][2];
        const buf = new ArrayBuffer(MESH_DRAW_BYTES), f = new Float32Array(buf), u = new Uint32Array(buf);
        for (let r = 0; r < 3; ++r) {
          f.set(toView[r], 4 * r);
          f.set(cof[r].map((v) => v / det), 12 + 4 * r);
        }
        f.set(dr.draw.base_color, 24);
        f.set([camera.fx, camera.fy, camera.cx, camera.cy], 28);
        f.set([camera.width, camera.height, 1, 0], 32);
        const t = dr.draw.texture;
        u.set(t ? [t.width, t.height, t.wrap_s, t.wrap_t] : [0, 0, 0, 0], 36);
        u.set([dr.flags, 0, 0, 0], 40);
        this.device.queue.writeBuffer(dr.uniform, 0, buf);
      }
    }
  }

  // Buffers and bind groups for the image size, the splat count and the key capacity.
  build(width, height) {
    const d = this.device, sc = this.scene, n = sc.count;
    if (this.resources) for (const b of this.resources) b.destroy();
    const res = [];
    const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
    const make = (bytes, label) => { const b = this.buffer(bytes, S, label); res.push(b); return b; };
    const maxBinding = d.limits.maxStorageBufferBindingSize;
    this.keyCapacity = Math.min(this.keyCapacity, Math.floor(maxBinding / 4), 65535 * BLOCK);
    const cap = this.keyCapacity;
    const tilesX = Math.ceil(width / 16), tilesY = Math.ceil(height / 16), tileCount = tilesX * tilesY;
    const proj = make(n * PROJ_BYTES, 'proj'), touched = make(n * 4, 'touched'), offsets = make(n * 4, 'offsets');
    const tl1n = Math.ceil(n / BLOCK), tl2n = Math.ceil(tl1n / BLOCK);
    const tL1 = make(tl1n * 4, 'touched sums 1'), tL2 = make(tl2n * 4, 'touched sums 2'), tL3 = make(16, 'touched sums 3');
    const tSizes = make(16, 'touched sizes');
    d.queue.writeBuffer(tSizes, 0, new Uint32Array([n, tl1n, tl2n, 0]));
    const keySets = [0, 1].map((s) => ['hi', 'lo', 'val'].map((k) => make(cap * 4, `keys ${k} ${s}`)));
    const histN = 256 * Math.ceil(cap / BLOCK), hl1n = Math.ceil(histN / BLOCK), hl2n = Math.ceil(hl1n / BLOCK);
    const hist = make(histN * 4, 'histogram'), hL1 = make(hl1n * 4, 'histogram sums 1'), hL2 = make(hl2n * 4, 'histogram sums 2');
    const hL3 = make(16, 'histogram sums 3');
    const ranges = make(tileCount * 8, 'tile ranges');
    const image = make(width * height * 16, 'image');
    const texture = (format, label) => {
      const t = d.createTexture({ size: [width, height], format, label, usage: GPUTextureUsage.RENDER_ATTACHMENT | GPUTextureUsage.TEXTURE_BINDING });
      res.push(t);
      return t;
    };
    const meshColor = texture('rgba32float', 'mesh colour'), meshDepth = texture('r32float', 'mesh view depth');
    const meshZ = texture('depth32float', 'mesh depth test');
    const blitInfo = this.buffer(16, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, 'blit info');
    res.push(blitInfo);
    d.queue.writeBuffer(blitInfo, 0, new Uint32Array([width, height, 0, 0]));
    const imageRead = d.createBuffer({ size: width * height * 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    res.push(imageRead);

    const P = this.pipelines, F = this.frameBuffer;
    const scanGroups = (data, sums, sizes, level) => ({
      blocks: this.bind(P.scanBlocks, [[0, data], [1, sums], [2, sizes], [3, this.levelBuffers[level]]]),
      add: this.bind(P.scanAdd, [[0, data], [1, sums], [2, sizes], [3, this.levelBuffers[level]]]),
    });
    // Radix passes: 8 bits each over the depth word, then over the tile word's significant bits.
    const shifts = [0, 8, 16, 24];
    for (let s = 0; s < bitWidth(tileCount); s += 8) shifts.push(32 + s);
    const passes = shifts.map((shift, p) => {
      const [sh, sl, sv] = keySets[p % 2], [dh, dl, dv] = keySets[(p + 1) % 2];
      const u = this.shiftBuffers[shift / 8];
      return {
        histogram: this.bind(P.histogram, [[0, this.control], [1, u], [2, sh], [3, sl], [5, hist]]),
        scatter: this.bind(P.scatter, [[0, this.control], [1, u], [2, sh], [3, sl], [4, sv], [5, hist], [6, dh], [7, dl], [8, dv]]),
      };
    });
    const [fh, , fv] = keySets[shifts.length % 2];
    this.size = {
      width, height, tilesX, tilesY, tileCount, n, cap, passes, image, imageRead, rangesBuffer: ranges, touched, offsets, tl1n, tl2n,
      proj, emittedKeys: keySets[0], sortedKeys: keySets[shifts.length % 2],
      preprocess: this.bind(P.preprocess, [[0, F], [1, sc.positions], [2, sc.covariances], [3, sc.opacities], [4, sc.sh], [5, proj], [6, touched], [7, sc.objects], [8, sc.sortDepths]]),
      touchedScan: [scanGroups(offsets, tL1, tSizes, 0), scanGroups(tL1, tL2, tSizes, 1), scanGroups(tL2, tL3, tSizes, 2)],
      histScan: [scanGroups(hist, hL1, this.control, 4), scanGroups(hL1, hL2, this.control, 5), scanGroups(hL2, hL3, this.control, 6)],
      setup: this.bind(P.setup, [[0, F], [2, touched], [3, offsets], [7, this.control]]),
      emit: this.bind(P.emit, [[0, F], [1, proj], [2, touched], [3, offsets], [4, keySets[0][0]], [5, keySets[0][1]], [6, keySets[0][2]]]),
      ranges: this.bind(P.ranges, [[0, F], [1, this.control], [2, fh], [4, ranges]]),
      raster: this.bind(P.raster, [[0, F], [3, fv], [4, ranges], [5, proj], [6, image], [7, meshColor.createView()], [8, meshDepth.createView()]]),
      meshTargets: [meshColor.createView(), meshDepth.createView(), meshZ.createView()],
      blit: this.bind(P.blit, [[0, image], [1, blitInfo]]),
    };
    this.resources = res;
  }

  writeFrame(camera, background) {
    const sc = this.scene, z = this.size;
    const buf = new ArrayBuffer(FRAME_BYTES), f = new Float32Array(buf), u = new Uint32Array(buf);
    f.set(camera.view, 0);  // 12 floats: rows of world_to_camera
    f.set([camera.fx, camera.fy, camera.cx, camera.cy], 12);
    f.set([background[0], background[1], background[2], 1], 16);
    f.set([camera.eye[0], camera.eye[1], camera.eye[2], 1], 20);
    u.set([z.width, z.height, z.tilesX, z.tilesY, sc.count, sc.objectCount, z.cap, z.tileCount], 24);
    this.device.queue.writeBuffer(this.frameBuffer, 0, buf);
  }

  // Runs `work` after the frames and read-backs asked for before it (they share the read-back buffers).
  serialized(work) {
    const run = this.queue.then(work);
    this.queue = run.catch(() => {});
    return run;
  }

  // Records and submits one frame for `camera` ({view: 12 floats, fx, fy, cx, cy, eye, width, height}); with
  // `show`, also draws it into the canvas. Resolves when the GPU has finished it, with its figures (`passMs`: the
  // milliseconds of each of TIMED_PASSES where the device has timestamp-query, else null; with `capture`, `passes`:
  // readCapture's buffers). Frames asked for while one is under way follow it.
  render(camera, background, options = {}) {
    return this.serialized(() => this.renderNow(camera, background, options));
  }

  // With `capture` (the test page, ?passes=1) the frame also copies each pass's output to buffers the host maps
  // after it: the answer's `passes` (see capturePasses). A frame without it records no copy more.
  async renderNow(camera, background, { show = true, capture = false } = {}) {
    const d = this.device;
    if (!this.size || this.size.width !== camera.width || this.size.height !== camera.height) this.build(camera.width, camera.height);
    for (;;) {
      const t0 = performance.now();
      this.writeFrame(camera, background);
      this.writeMeshDraws(camera);
      const z = this.size, P = this.pipelines;
      const enc = d.createCommandEncoder();
      const stamps = (stage) => this.timestamps
        ? { querySet: this.querySet, beginningOfPassWriteIndex: 2 * stage, endOfPassWriteIndex: 2 * stage + 1 }
        : undefined;
      let stage = 0;
      const stageNames = [];  // the frame's stages in the order recorded (a frame without characters has no deform)
      const nextStage = (name) => { stageNames.push(name); return stage++; };
      const computePass = (name) => { const i = nextStage(name); return enc.beginComputePass({ label: name, timestampWrites: stamps(i) }); };
      const cap = capture ? this.captureBuffers() : null;
      enc.clearBuffer(z.rangesBuffer);
      const generated = this.generators.filter((g) => g.posed);
      if (generated.length) {
        const decode = computePass('generate');
        decode.setPipeline(P.decodeGenerated);
        for (const g of generated) {
          decode.setBindGroup(0, g.bind);
          decode.dispatchWorkgroups(...groups1d(Math.ceil(g.rows / 256)));
        }
        decode.end();
      }
      const posed = this.characters.filter((c) => c.posed);
      if (posed.length) {
        const deform = computePass('deform');
        for (const c of posed) {
          if (c.gpuSkin) {
            deform.setPipeline(P.skin);
            deform.setBindGroup(0, c.skinBind);
            deform.dispatchWorkgroups(...groups1d(Math.ceil(c.vertexCount / 256)));
          }
          deform.setPipeline(P.deformSplats);
          deform.setBindGroup(0, c.deformBind);
          deform.dispatchWorkgroups(...groups1d(Math.ceil(c.count / 256)));
        }
        deform.end();
      }
      let pass = computePass('preprocess');
      pass.setPipeline(P.preprocess);
      pass.setBindGroup(0, z.preprocess);
      pass.dispatchWorkgroups(...groups1d(Math.ceil(z.n / 256)));
      pass.end();
      enc.copyBufferToBuffer(z.touched, 0, z.offsets, 0, z.n * 4);
      if (cap) enc.copyBufferToBuffer(z.touched, 0, cap.touched, 0, z.n * 4);
      pass = computePass('scan');
      const counts = [Math.ceil(z.n / BLOCK), Math.ceil(z.tl1n / BLOCK), Math.ceil(z.tl2n / BLOCK)];
      for (let l = 0; l < 3; ++l) {
        pass.setPipeline(P.scanBlocks);
        pass.setBindGroup(0, z.touchedScan[l].blocks);
        pass.dispatchWorkgroups(counts[l]);
      }
      for (let l = 1; l >= 0; --l) {
        pass.setPipeline(P.scanAdd);
        pass.setBindGroup(0, z.touchedScan[l].add);
        pass.dispatchWorkgroups(counts[l]);
      }
      pass.setPipeline(P.setup);
      pass.setBindGroup(0, z.setup);
      pass.dispatchWorkgroups(1);
      pass.end();
      pass = computePass('keys');
      pass.setPipeline(P.emit);
      pass.setBindGroup(0, z.emit);
      pass.dispatchWorkgroups(...groups1d(Math.ceil(z.n / 256)));
      pass.end();
      if (cap) z.emittedKeys.forEach((b, k) => enc.copyBufferToBuffer(b, 0, cap.emitted[k], 0, z.cap * 4));
      pass = computePass('sort');
      for (const p of z.passes) {
        pass.setPipeline(P.histogram);
        pass.setBindGroup(0, p.histogram);
        pass.dispatchWorkgroupsIndirect(this.control, 8 * 4);
        const args = [11, 14, 17];
        for (let l = 0; l < 3; ++l) {
          pass.setPipeline(P.scanBlocks);
          pass.setBindGroup(0, z.histScan[l].blocks);
          pass.dispatchWorkgroupsIndirect(this.control, args[l] * 4);
        }
        for (let l = 1; l >= 0; --l) {
          pass.setPipeline(P.scanAdd);
          pass.setBindGroup(0, z.histScan[l].add);
          pass.dispatchWorkgroupsIndirect(this.control, args[l] * 4);
        }
        pass.setPipeline(P.scatter);
        pass.setBindGroup(0, p.scatter);
        pass.dispatchWorkgroupsIndirect(this.control, 8 * 4);
      }
      pass.end();
      pass = computePass('ranges');
      pass.setPipeline(P.ranges);
      pass.setBindGroup(0, z.ranges);
      pass.dispatchWorkgroupsIndirect(this.control, 20 * 4);
      pass.end();
      {  // meshes
        const i = nextStage('meshes');
        const [color, depth, test] = z.meshTargets;
        const rp = enc.beginRenderPass({
          label: 'meshes', timestampWrites: stamps(i),
          colorAttachments: [color, depth].map((view) => ({ view, loadOp: 'clear', storeOp: 'store', clearValue: [0, 0, 0, 0] })),
          depthStencilAttachment: { view: test, depthLoadOp: 'clear', depthStoreOp: 'discard', depthClearValue: 0 },
        });
        rp.setPipeline(P.mesh);
        for (const inst of this.meshes) {
          for (const dr of inst.draws) {
            if (!dr.matrix) continue;
            rp.setBindGroup(0, dr.bind);
            if (dr.indices) {
              rp.setIndexBuffer(dr.indices, 'uint32');
              rp.drawIndexed(dr.draw.indices.length);
            } else {
              rp.draw(dr.draw.vertices);
            }
          }
        }
        rp.end();
      }
      pass = computePass('raster');
      pass.setPipeline(P.raster);
      pass.setBindGroup(0, z.raster);
      pass.dispatchWorkgroups(z.tilesX, z.tilesY);
      pass.end();
      if (show) {
        const i = nextStage('blit');
        const rp = enc.beginRenderPass({
          label: 'blit', timestampWrites: stamps(i),
          colorAttachments: [{ view: this.context.getCurrentTexture().createView(), loadOp: 'clear', storeOp: 'store', clearValue: [0, 0, 0, 1] }],
        });
        rp.setPipeline(P.blit);
        rp.setBindGroup(0, z.blit);
        rp.draw(3);
        rp.end();
      }
      if (this.timestamps) {
        enc.resolveQuerySet(this.querySet, 0, 2 * stage, this.queryResolve, 0);
        enc.copyBufferToBuffer(this.queryResolve, 0, this.queryRead, 0, 2 * stage * 8);
      }
      enc.copyBufferToBuffer(this.control, 0, this.controlRead, 0, CONTROL_WORDS * 4);
      if (cap) {
        enc.copyBufferToBuffer(z.proj, 0, cap.proj, 0, z.n * PROJ_BYTES);
        enc.copyBufferToBuffer(z.offsets, 0, cap.offsets, 0, z.n * 4);
        z.sortedKeys.forEach((b, k) => enc.copyBufferToBuffer(b, 0, cap.sorted[k], 0, z.cap * 4));
        enc.copyBufferToBuffer(z.rangesBuffer, 0, cap.ranges, 0, z.tileCount * 8);
      }
      d.queue.submit([enc.finish()]);
      const reads = [this.controlRead.mapAsync(GPUMapMode.READ)];
      if (this.timestamps) reads.push(this.queryRead.mapAsync(GPUMapMode.READ));
      await Promise.all(reads);
      const c = new Uint32Array(this.controlRead.getMappedRange().slice(0));
      this.controlRead.unmap();
      let passMs = null;
      if (this.timestamps) {
        const t = new BigInt64Array(this.queryRead.getMappedRange(0, 2 * stage * 8));
        passMs = {};
        // The GPU's clock may step back between passes: a negative span counts as 0.
        for (let i = 0; i < stage; ++i) passMs[stageNames[i]] = Math.max(0, Number(t[2 * i + 1] - t[2 * i])) / 1e6;
        this.queryRead.unmap();
      }
      const ms = performance.now() - t0;
      this.stats = { keysWanted: c[0], keys: c[1], ms, splats: z.n, triangles: this.triangles, capacity: z.cap, passMs };
      if (c[0] <= z.cap || z.cap >= Math.floor(d.limits.maxStorageBufferBindingSize / 4)) {
        if (cap) this.stats.passes = await this.readCapture(cap, c);
        return this.stats;
      }
      if (cap) this.destroyCapture(cap);
      // More keys than the buffers hold: grow them and draw the frame again.
      this.keyCapacity = Math.ceil(c[0] * 1.25);
      this.build(camera.width, camera.height);
    }
  }

  // Read-back buffers for one captured frame (the test page's): every pass's output at the frame's sizes.
  captureBuffers() {
    const z = this.size;
    const read = (bytes, label) => this.device.createBuffer({ size: Math.max(16, bytes), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label });
    return {
      proj: read(z.n * PROJ_BYTES, 'capture proj'), touched: read(z.n * 4, 'capture touched'), offsets: read(z.n * 4, 'capture offsets'),
      emitted: ['hi', 'lo', 'val'].map((k) => read(z.cap * 4, `capture emitted ${k}`)),
      sorted: ['hi', 'lo', 'val'].map((k) => read(z.cap * 4, `capture sorted ${k}`)),
      ranges: read(z.tileCount * 8, 'capture ranges'),
    };
  }

  destroyCapture(cap) {
    for (const b of [cap.proj, cap.touched, cap.offsets, ...cap.emitted, ...cap.sorted, cap.ranges]) b.destroy();
  }

  // The captured frame's pass outputs, as bytes: `proj` (preprocess: 48 bytes a slot, struct Proj of common.wgsl),
  // `touched` (preprocess: tiles reached a slot), `offsets` (scan: their exclusive prefix sum), the emit pass's keys
  // in the order it wrote them (`emitted_tiles`, `emitted_depths`: the depth's float bits, `emitted_values`: the
  // slot) and the same after the sort (`sorted_*`), `keys` of each; `ranges` (per tile its [begin, end) in the
  // sorted keys); and the counters `keysWanted` and `keys` (control[0], control[1]).
  async readCapture(cap, control) {
    const z = this.size, keys = control[1];
    const take = async (b, bytes) => {
      await b.mapAsync(GPUMapMode.READ, 0, Math.max(16, bytes));
      const out = new Uint8Array(b.getMappedRange(0, bytes).slice(0));
      b.unmap();
      return out;
    };
    const out = {
      slots: z.n, tilesX: z.tilesX, tilesY: z.tilesY, keysWanted: control[0], keys,
      proj: await take(cap.proj, z.n * PROJ_BYTES), touched: await take(cap.touched, z.n * 4), offsets: await take(cap.offsets, z.n * 4),
    };
    const names = ['tiles', 'depths', 'values'];
    for (let k = 0; k < 3; ++k) out[`emitted_${names[k]}`] = await take(cap.emitted[k], keys * 4);
    for (let k = 0; k < 3; ++k) out[`sorted_${names[k]}`] = await take(cap.sorted[k], keys * 4);
    out.ranges = await take(cap.ranges, z.tileCount * 8);
    this.destroyCapture(cap);
    return out;
  }

  // The last frame's float RGBA image, row by row from the top.
  readImage() {
    return this.serialized(() => this.readImageNow());
  }

  async readImageNow() {
    const z = this.size, d = this.device;
    const enc = d.createCommandEncoder();
    enc.copyBufferToBuffer(z.image, 0, z.imageRead, 0, z.width * z.height * 16);
    d.queue.submit([enc.finish()]);
    await z.imageRead.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(z.imageRead.getMappedRange().slice(0));
    z.imageRead.unmap();
    return out;
  }
}
