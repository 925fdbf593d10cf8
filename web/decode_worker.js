// The page's decoder, off the main thread: the engine's decodeSplats, scene document and glTF models (reader,
// clip sampling, skinning) compiled to WebAssembly (web/wasm/, sf_decode.js + sf_decode.wasm). Each request carries
// an `id` its answers repeat:
//   {op: 'open', bytes, name, width, height, clip, time}: a scene JSON (as the engine decides by the name) is read,
//     answered {type: 'scene', info} (web/wasm/decode_api.cpp sf_web_scene_parse) and kept for the requests below;
//     a glTF model (web/wasm/gltf_api.cpp) is opened and kept, its clip `clip` (as --clip names it) posed at scene
//     time `time`, answered {type: 'model', info, model, clip, pose, cloud (its gaussians, or null), camera} (a
//     model of gaussians alone is a splat file, as on the command line); any other file is decoded, answered
//     {type: 'splats', info, cloud, camera} (the starting camera's 27 numbers).
//   {op: 'object', bytes, name, objects, gltf, time}: the file of the kept scene's objects `objects` (indices),
//     decoded and added to the scene's bounds, answered {type: 'cloud', info, cloud}; with `gltf` (the objects'
//     "clip", "time", "speed", "loop", "dqs", "gltf_key" as the scene info gives them) a glTF model, each object
//     posed at scene time `time` and kept, answered {type: 'model', info, model, clips, poses, cloud}, or, for a
//     "file" holding gaussians alone, as a splat file.
//     A splat character package's character.json (web/wasm/character_api.cpp) is opened with the package's files
//     (fetched relative to it), its clip `clip` (as render --clip names it; default: the package's), the face
//     layer `expression` ([[morph target, weight]]) and look-at `lookAt` ([x, y, z] or null) set, posed at scene
//     time `time`, answered {type: 'character', info, character (the deform's static inputs), clip, pose,
//     cloud, camera}.
//   {op: 'object', bytes, name, objects, character, time}: with `character` (the objects' "resolved", "clip",
//     "time", "speed", "loop", "dqs" as the scene info gives them) the splat character package whose
//     character.json is `bytes` (its files fetched relative to it), each object's clip taken and posed at scene
//     time `time` and kept, answered {type: 'characters', info, character (the deform's static inputs), clips,
//     poses, cloud (the package's splats, which each object's slots start from)}.
//   {op: 'pose', time}: every kept glTF object and character posed at scene time `time`, answered {type: 'poses',
//     poses: [{clip, clipTime, draws: [{positions, normals, matrix}]}], characters: [{clip, clipTime, palette, dq,
//     morphWeights, vertices, matrix}]} in the order they were kept.
//   {op: 'clip', object, clip}: kept animated object `object` (the glTF objects, then the characters) plays clip
//     `clip` (an index) from now on.
//   {op: 'scene-points', name, object, positions}: a generator object's points (its live centres, x, y, z each, in
//     its space) added to the kept scene's bounds (the model runs in neural_worker.js), answered {type: 'attached'}.
//   {op: 'scene-camera', width, height}: the kept scene's starting camera once every object is added, answered
//     {type: 'camera', camera}; the scene is let go.
//   {op: 'close'}: the kept scene is let go (a load that failed); answered {type: 'closed'}.
//   Neural generators (web/wasm/neural_api.cpp; the model itself runs in neural_worker.js): {op: 'is-generator',
//     name}: whether the engine takes `name` for a generator (.onnx), answered {type: 'kind', generator};
//     {op: 'generator-contract', name, signature: {inputs, outputs, metadata}}: the engine's contract of the model
//     (detectContract), answered {type: 'contract', contract}, or its message; {op: 'generator-camera', name,
//     positions, width, height}: the starting camera `render` frames for the decoded centres, {type: 'camera'}.
// A SOG file's lossless WebP images are decoded by the browser (decodeWebp), the rest by the engine: an unpacked SOG
// (meta.json) first asks for its image files, {type: 'files', files: [{name, path}]} (name relative to the file,
// path as messages name it), answered {op: 'files', files: [{path, bytes} or {path, error}]} (or {op: 'files', error}
// when they cannot be had) with the request's id.
// While it works it sends {type: 'progress', stage}; a failure is {type: 'error', message}, in the words the command
// line prints. Arrays are transferred.
importScripts('sf_decode.js');

let modulePromise = null;
function decoder() {
  if (!modulePromise) modulePromise = createSplatDecoder();
  return modulePromise;
}

let scene = 0;  // the kept WebScene (a pointer into the module), 0 when none
let models = [];  // the glTF models opened since the last 'open' (pointers into the module)
let gltfObjects = [];  // the kept glTF objects: {model, clip, time, speed, loop, dqs}
let characterObjects = [];  // the kept characters: {c, info, clip, time, speed, loop, dqs, lookAt}
let sceneName = '';  // the scene file the kept WebScene was read from (for messages)

// A message in the engine's words, complete (it names the file).
class EngineError extends Error {}

function copyFloats(m, ptr, count) {
  return new Float32Array(m.HEAPF32.buffer, ptr, count).slice();
}

// Calls f with the string in the module's memory.
function withString(m, text, f) {
  const size = m.lengthBytesUTF8(text) + 1;
  const ptr = m._malloc(size);
  if (!ptr) throw new Error('ran out of memory');
  m.stringToUTF8(text, ptr, size);
  try {
    return f(ptr);
  } finally {
    m._free(ptr);
  }
}

// Calls f with the bytes in the module's memory.
function withBytes(m, bytes, name, f) {
  const data = new Uint8Array(bytes);
  const ptr = m._sf_web_alloc(data.length);
  if (!ptr) throw new EngineError(`${name}: ran out of memory while loading`);
  m.HEAPU8.set(data, ptr);
  try {
    return f(ptr, data.length);
  } finally {
    m._sf_web_free_bytes(ptr);
  }
}

function releaseModels(m) {
  for (const g of models) m._sf_web_gltf_release(g);
  models = [];
  gltfObjects = [];
  for (const c of new Set(characterObjects.map((o) => o.c))) m._sf_web_character_release(c);  // objects may share one
  characterObjects = [];
  for (const o of hullObjects) m._sf_web_hull_release(o.h);
  hullObjects = [];
}

// The kept splat hulls: {h, name, toWorld}, each drawn from the frame inputs the engine's buildHullFrame makes for
// the camera and time asked (hullFrame).
let hullObjects = [];

// Opens the splat hull `name` (its bytes already in the module's file system, sf_web_is_hull) in `mode`, with its
// meta sidecar (hullMetaPath) when the page can fetch it: the engine's HullAsset::load; throws its message.
async function openHull(m, name, mode, needFiles) {
  const metaPath = m.UTF8ToString(withString(m, name, (p) => m._sf_web_hull_meta_name(p)));
  let meta = null;
  try {
    const [f] = await needFiles([{ path: metaPath, name: metaPath.slice(metaPath.lastIndexOf('/') + 1) }]);
    if (f && f.bytes) meta = f.bytes;
  } catch {
    meta = null;  // a dropped file brings no sidecar
  }
  const open = (metaPtr, metaSize) => withString(m, name, (p) => withString(m, mode, (q) => m._sf_web_hull_open(p, metaPtr, metaSize, q)));
  const h = meta ? withBytes(m, meta, metaPath, (ptr, size) => open(ptr, size)) : open(0, 0);
  if (!h) throw new EngineError(`${name}: ran out of memory while loading`);
  const info = JSON.parse(m.UTF8ToString(m._sf_web_hull_info(h)));
  if (!info.ok) {
    m._sf_web_hull_release(h);
    throw new EngineError(info.error);
  }
  return { h, info };
}

// Hull o's frame inputs for `camera` ({view, fx, fy, cx, cy, width, height}) at scene time `time`, as buildHullFrame
// makes them: the gaussians (cloudOf's layout), their sort depths (baked: the shell's, else none) and the core's
// octagon mesh with its lit colours (baked), or throws the engine's message.
function hullFrame(m, o, camera, time) {
  const ptr = m._malloc(28 * 4);
  let info;
  try {
    m.HEAPF32.set(o.toWorld, ptr / 4);
    m.HEAPF32.set(camera.view, ptr / 4 + 12);
    m.HEAPF32.set([camera.fx, camera.fy, camera.cx, camera.cy], ptr / 4 + 24);
    info = answer(m, m._sf_web_hull_frame(o.h, ptr, ptr + 48, ptr + 96, camera.width, camera.height, time));
  } finally {
    m._free(ptr);
  }
  const h = o.h, r = m._sf_web_hull_cloud(h);
  return {
    info,
    cloud: info.gaussians ? cloudOf(m, r, info) : null,
    sortDepths: info.sort_depths ? copyFloats(m, m._sf_web_hull_sort_depths(h), info.sort_depths) : null,
    core: info.core_vertices ? {
      positions: copyFloats(m, m._sf_web_hull_core_positions(h), 3 * info.core_vertices),
      colors: copyFloats(m, m._sf_web_hull_core_colors(h), 4 * info.core_vertices),
      indices: new Uint32Array(m.HEAPU8.buffer, m._sf_web_hull_core_indices(h), info.core_indices).slice(),
    } : null,
  };
}

const hullTransfers = (frames) => frames.flatMap((f) => [...(f.cloud ? transfers(f.cloud) : []), ...(f.sortDepths ? [f.sortDepths.buffer] : []),
  ...(f.core ? [f.core.positions.buffer, f.core.colors.buffer, f.core.indices.buffer] : [])]);

// Opens a splat character package from its character.json (the module's WebCharacter), handing in the package's
// files its loader asks for (fetched by the page relative to character.json; one that fails is handed in as
// missing, and the loader says so in its words); returns {c, info}; throws the engine's message.
async function openCharacter(m, bytes, name, needFiles) {
  try {
    for (let round = 0; ; ++round) {
      const c = withFile(m, bytes, name, (ptr, size, namePtr) => m._sf_web_character_open(ptr, size, namePtr));
      const info = JSON.parse(m.UTF8ToString(m._sf_web_character_info(c)));
      if (info.ok) return { c, info };
      m._sf_web_character_release(c);
      if (!info.files || round >= 12) throw new EngineError(info.error || `${name}: the package's files could not be had`);
      for (const f of await needFiles(info.files)) {
        const handed = withString(m, f.path, (pathPtr) => (f.bytes
          ? withBytes(m, f.bytes, f.path, (ptr, size) => m._sf_web_character_file(pathPtr, ptr, size, 0))
          : m._sf_web_character_file(pathPtr, 0, 0, 1)));
        if (!handed) throw new EngineError(`${f.path}: ran out of memory while loading`);
      }
    }
  } finally {
    m._sf_web_character_files_clear();
  }
}

// The static inputs of character c's deform (copied out of the module).
function characterData(m, c, info) {
  const u32 = (ptr, count) => new Uint32Array(m.HEAPU8.buffer, ptr, count).slice();
  const n = info.vertices;
  const morphDeltas = info.gpu_skin ? copyFloats(m, m._sf_web_character_morph_deltas(c), m._sf_web_character_morph_delta_floats(c)) : null;
  return {
    gpuSkin: info.gpu_skin, eight: info.eight, vertexCount: n, jointCount: info.joints, targets: morphDeltas ? morphDeltas.length / (3 * n) : 0,
    bindings: u32(m._sf_web_character_bindings(c), 17 * info.gaussians),
    indices: u32(m._sf_web_character_indices(c), 3 * info.triangles),
    rest: info.gpu_skin ? copyFloats(m, m._sf_web_character_rest(c), 3 * n) : null,
    joints: info.gpu_skin ? u32(m._sf_web_character_joints(c), 8 * n) : null,
    weights: info.gpu_skin ? copyFloats(m, m._sf_web_character_weights(c), 8 * n) : null,
    morphDeltas,
  };
}

// Kept character o posed at scene time `time` (its clip time by anim::clipTimeAt) by the engine's animator: what
// the GPU deform reads this frame.
function poseCharacter(m, o, time) {
  const c = o.c;
  const clipTime = m._sf_web_character_clip_time(c, o.clip, time, o.time, o.speed, o.loop ? 1 : 0);
  const t = o.lookAt;
  const error = m._sf_web_character_pose(c, o.clip, clipTime, o.dqs ? 1 : 0, t ? 1 : 0, t ? t[0] : 0, t ? t[1] : 0, t ? t[2] : 0);
  if (error) throw new EngineError(m.UTF8ToString(error));
  return {
    clip: o.clip, clipTime, dqs: o.dqs,
    palette: copyFloats(m, m._sf_web_character_palette(c), m._sf_web_character_palette_floats(c)),
    dq: copyFloats(m, m._sf_web_character_dq(c), m._sf_web_character_dq_floats(c)),
    morphWeights: copyFloats(m, m._sf_web_character_morph_weights(c), m._sf_web_character_morph_count(c)),
    vertices: o.info.gpu_skin ? null : copyFloats(m, m._sf_web_character_vertices(c), 3 * o.info.vertices),
    matrix: Array.from(new Float32Array(m.HEAPF32.buffer, m._sf_web_character_matrix(c), 24)),
  };
}

const characterTransfers = (poses) => poses.flatMap((p) => [p.palette.buffer, p.dq.buffer, p.morphWeights.buffer, ...(p.vertices ? [p.vertices.buffer] : [])]);

// Opens a glTF model (the module's WebGltf; kept in `models`), handing in the external files its reader asks for
// (fetched by the page relative to the file; one that fails is handed in as missing, and the reader says so in
// its words); returns {g, info}; throws the engine's message.
async function openGltf(m, bytes, name, needFiles) {
  try {
    for (let round = 0; ; ++round) {
      const g = withFile(m, bytes, name, (ptr, size, namePtr) => m._sf_web_gltf_open(ptr, size, namePtr));
      const info = JSON.parse(m.UTF8ToString(m._sf_web_gltf_info(g)));
      if (info.ok) {
        models.push(g);
        return { g, info };
      }
      m._sf_web_gltf_release(g);
      if (!info.files || round >= 8) throw new EngineError(info.error || `${name}: its external files could not be had`);
      for (const f of await needFiles(info.files)) {
        const handed = withString(m, f.path, (pathPtr) => (f.bytes
          ? withBytes(m, f.bytes, f.path, (ptr, size) => m._sf_web_gltf_file(pathPtr, ptr, size, 0))
          : m._sf_web_gltf_file(pathPtr, 0, 0, 1)));
        if (!handed) throw new EngineError(`${f.path}: ran out of memory while loading`);
      }
    }
  } finally {
    m._sf_web_gltf_files_clear();
  }
}

// The clip an object of model g plays (GltfModel::objectClip), its file named `path` in messages.
function objectClip(m, g, path, clip) {
  return answer(m, withString(m, path, (p) => withString(m, clip || '', (c) => m._sf_web_gltf_clip(g, p, c)))).clip;
}

// A model with nothing but gaussians, and no clip asked for: a splat file (sceneFromFile, the scene loader).
const gaussiansOnly = (info, clip) => info.draws.length === 0 && info.clips.length === 0 && !clip;

// The static inputs of model g's drawn primitives (copied out of the module).
function modelData(m, g, info) {
  return {
    clips: info.clips,
    draws: info.draws.map((d, i) => ({
      ...d,
      indices: d.indices ? new Uint32Array(m.HEAPU8.buffer, m._sf_web_gltf_indices(g, i), d.indices).slice() : null,
      uvs: d.texture ? copyFloats(m, m._sf_web_gltf_uvs(g, i), 2 * d.vertices) : null,
      colors: d.colors ? copyFloats(m, m._sf_web_gltf_colors(g, i), 4 * d.vertices) : null,
      texels: d.texture ? new Uint8Array(m.HEAPU8.buffer, m._sf_web_gltf_texels(g, i), 4 * d.texture.width * d.texture.height).slice() : null,
    })),
  };
}

// Kept glTF object o posed at scene time `time` (its clip time by anim::clipTimeAt), skinned on the CPU.
function poseObject(m, o, time) {
  const clipTime = m._sf_web_gltf_clip_time(o.model, o.clip, time, o.time, o.speed, o.loop ? 1 : 0);
  const error = m._sf_web_gltf_pose(o.model, o.clip, clipTime, o.dqs ? 1 : 0);
  if (error) throw new EngineError(m.UTF8ToString(error));
  return {
    clip: o.clip, clipTime,
    draws: o.info.draws.map((d, i) => ({
      positions: copyFloats(m, m._sf_web_gltf_positions(o.model, i), 3 * d.vertices),
      normals: d.normals ? copyFloats(m, m._sf_web_gltf_normals(o.model, i), 3 * d.vertices) : null,
      matrix: Array.from(new Float32Array(m.HEAPF32.buffer, m._sf_web_gltf_matrix(o.model, i), 16)),
    })),
  };
}

const poseTransfers = (poses) => poses.flatMap((p) => p.draws.flatMap((d) => [d.positions.buffer, ...(d.normals ? [d.normals.buffer] : [])]));

// The gaussians of model g as a cloud, or null.
function modelCloud(m, g, info) {
  return info.gaussians ? releasedCloud(m, m._sf_web_gltf_splats(g)) : null;
}

// The cloud of the module's result r (a model's or a character's splats), which is then released; throws the
// engine's message when r says it failed.
function releasedCloud(m, r) {
  try {
    return cloudOf(m, r, answer(m, m._sf_web_info(r)));
  } finally {
    m._sf_web_release(r);
  }
}

function releaseScene(m) {
  if (scene) m._sf_web_scene_release(scene);
  scene = 0;
}

// Calls the module's f(bytes, size, name) with the file in its memory.
function withFile(m, bytes, name, f) {
  return withBytes(m, bytes, name, (ptr, size) => withString(m, name, (namePtr) => f(ptr, size, namePtr)));
}

// A JSON answer of the module; throws the engine's message when it says it failed.
function answer(m, ptr) {
  const info = JSON.parse(m.UTF8ToString(ptr));
  if (!info.ok) throw new EngineError(info.error);
  return info;
}

// Decodes a file: the result (release it with _sf_web_release) and its description; throws the engine's message. A
// SOG file whose images the browser has not decoded is answered {sog_images: true}: they are handed in
// (handInSogImages) and the file decoded again. `needFiles(files)` fetches the files an unpacked SOG names.
async function decodeFile(m, bytes, name, needFiles, progress) {
  const decode = () => {
    const r = withFile(m, bytes, name, (ptr, size, namePtr) => m._sf_web_decode(ptr, size, namePtr));
    return { r, info: JSON.parse(m.UTF8ToString(m._sf_web_info(r))) };
  };
  let { r, info } = decode();
  if (info.sog_images) {
    m._sf_web_release(r);
    try {
      await handInSogImages(m, bytes, name, needFiles, progress);
      ({ r, info } = decode());
    } finally {
      m._sf_web_sog_clear();
    }
  }
  if (!info.ok) {
    m._sf_web_release(r);
    throw new EngineError(info.error);
  }
  return { r, info };
}

// A SOG file's images handed to the module (web/wasm/decode_api.cpp): an unpacked SOG's image files, then each
// image the engine has read and checked (inspectSog) decoded here; one that does not decode is left out, and the
// engine then says so in its words.
async function handInSogImages(m, bytes, name, needFiles, progress) {
  const { files } = answer(m, withFile(m, bytes, name, (ptr, size, namePtr) => m._sf_web_sog_files(ptr, size, namePtr)));
  if (files.length) {
    for (const f of await needFiles(files)) {
      const handed = withString(m, f.path, (pathPtr) => (f.bytes
        ? withBytes(m, f.bytes, f.path, (ptr, size) => m._sf_web_sog_file(pathPtr, ptr, size, 0))
        : withString(m, f.error, (errorPtr) => m._sf_web_sog_file(pathPtr, 0, 0, errorPtr))));
      if (!handed) throw new EngineError(`${f.path}: ran out of memory while loading`);
    }
  }
  const { images } = answer(m, withFile(m, bytes, name, (ptr, size, namePtr) => m._sf_web_sog_inspect(ptr, size, namePtr)));
  for (let i = 0; i < images.length; ++i) {
    progress(`decoding ${name}: image ${i + 1} of ${images.length} (${images[i].describe})`);
    const webp = new Uint8Array(m.HEAPU8.buffer, m._sf_web_sog_webp(i), m._sf_web_sog_webp_size(i)).slice();
    const rgba = await decodeWebp(webp, images[i].width, images[i].height);
    if (!rgba) continue;
    const ptr = m._sf_web_sog_pixels(i);
    if (!ptr) throw new EngineError(`${name}: ran out of memory while loading`);
    m.HEAPU8.set(rgba, ptr);
  }
}

// The texels of a lossless WebP of width x height as RGBA, exactly as stored (SOG keeps numbers in every channel,
// RGB under any alpha): the decoded frame's own bytes, without colour-space conversion or premultiplied alpha, put
// in RGBA order here. (A canvas premultiplies alpha, and a frame copied out in another format goes through it too:
// both alter the values.) Null when it does not decode to that size in one of the frame layouts read here.
const FRAME_LAYOUTS = { RGBA: [0, 1, 2, 3], RGBX: [0, 1, 2, -1], BGRA: [2, 1, 0, 3], BGRX: [2, 1, 0, -1] };
async function decodeWebp(webp, width, height) {
  if (typeof ImageDecoder === 'undefined') throw new Error('this browser has no ImageDecoder (WebCodecs), which SOG\'s images need to be decoded exactly');
  let decoder = null, frame = null;
  try {
    decoder = new ImageDecoder({ data: webp, type: 'image/webp', colorSpaceConversion: 'none', premultiplyAlpha: 'none' });
    frame = (await decoder.decode()).image;
    const layout = FRAME_LAYOUTS[frame.format];
    if (!layout || frame.codedWidth !== width || frame.codedHeight !== height || frame.allocationSize() !== width * height * 4) return null;
    const texels = new Uint8Array(width * height * 4);
    await frame.copyTo(texels);
    const rgba = new Uint8Array(texels.length);
    for (let i = 0; i < texels.length; i += 4) {
      for (let c = 0; c < 3; ++c) rgba[i + c] = texels[i + layout[c]];
      rgba[i + 3] = layout[3] < 0 ? 255 : texels[i + 3];
    }
    return rgba;
  } catch {
    return null;
  } finally {
    if (frame) frame.close();
    if (decoder) decoder.close();
  }
}

// Asks the page for the files request `id` needs; resolved by its 'files' message.
const waitingFiles = new Map();
function needFilesOf(id) {
  return (files) => new Promise((resolve, reject) => {
    waitingFiles.set(id, { resolve, reject });
    self.postMessage({ id, type: 'files', files });
  });
}

function cloudOf(m, r, info) {
  const n = info.gaussians;
  return {
    count: n, shDegree: info.sh_degree, antialiased: info.antialiased, linear: info.linear, screenFilter: info.screen_filter,
    positions: copyFloats(m, m._sf_web_positions(r), 3 * n),
    covariances: copyFloats(m, m._sf_web_covariances(r), 6 * n),
    opacities: copyFloats(m, m._sf_web_opacities(r), n),
    sh: copyFloats(m, m._sf_web_sh(r), m._sf_web_sh_floats(r)),
  };
}

const transfers = (cloud) => [cloud.positions.buffer, cloud.covariances.buffer, cloud.opacities.buffer, cloud.sh.buffer];

function camera27(m, f) {
  const ptr = m._malloc(27 * 4);
  try {
    return f(ptr) ? Array.from(new Float32Array(m.HEAPF32.buffer, ptr, 27)) : null;
  } finally {
    m._free(ptr);
  }
}

// Requests are handled one at a time, in the order they came: the module keeps one file's state while the browser
// decodes its images or the page fetches its files (a SOG's images, a glTF's buffers), and a request started in
// between would reset it. Only the files a request waits for are taken at once.
let requests = Promise.resolve();
self.onmessage = (event) => {
  const { id, op } = event.data;
  if (op === 'files') {  // the files a request waits for
    const waiting = waitingFiles.get(id);
    waitingFiles.delete(id);
    if (waiting && event.data.error) waiting.reject(new EngineError(event.data.error));
    else if (waiting) waiting.resolve(event.data.files);
    return;
  }
  requests = requests.then(() => handleRequest(event));
};

async function handleRequest(event) {
  const { id, op, name } = event.data;
  const reply = (message, transfer = []) => self.postMessage({ id, ...message }, transfer);
  const progress = (stage) => reply({ type: 'progress', stage });
  try {
    reply({ type: 'progress', stage: 'starting the decoder' });
    const m = await decoder();
    if (op === 'open') {
      const { bytes, width, height } = event.data;
      releaseScene(m);
      releaseModels(m);
      if (withString(m, name, (namePtr) => m._sf_web_is_gltf(namePtr))) {
        progress(`reading ${name}`);
        const { g, info } = await openGltf(m, bytes, name, needFilesOf(id));
        const clip = objectClip(m, g, name, event.data.clip);
        if (!gaussiansOnly(info, event.data.clip)) {
          for (const w of info.warnings) console.warn(`${name}: ${w}`);
          const o = { model: g, info, clip, time: 0, speed: 1, loop: true, dqs: false };
          gltfObjects.push(o);
          const pose = poseObject(m, o, event.data.time);
          const camera = camera27(m, (ptr) => m._sf_web_gltf_camera(g, width, height, ptr) > 0);
          if (!camera) throw new EngineError(`${name}: the model has nothing to frame (no vertices, no gaussians)`);
          const cloud = modelCloud(m, g, info);
          reply({ type: 'model', info, model: modelData(m, g, info), clip, pose, cloud, camera },
            [...poseTransfers([pose]), ...(cloud ? transfers(cloud) : [])]);
          return;
        }
        releaseModels(m);  // gaussians alone: decoded as the splat file it is
      }
      if (withFile(m, bytes, name, (ptr, size, namePtr) => m._sf_web_is_hull(ptr, size, namePtr))) {
        progress(`reading the splat hull ${name}`);
        const { h, info } = await openHull(m, name, event.data.hullMode || 'baked', needFilesOf(id));
        const o = { h, name, toWorld: [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0] };
        hullObjects.push(o);
        const camera = camera27(m, (ptr) => m._sf_web_hull_camera(h, width, height, ptr) > 0);
        if (!camera) throw new EngineError(`${name}: the hull has nothing to frame`);
        const view = event.data.camera || { view: camera.slice(0, 12), fx: camera[12], fy: camera[13], cx: camera[14], cy: camera[15], width, height };
        const frame = hullFrame(m, o, view, event.data.time);
        reply({ type: 'hull', info, frame, camera }, hullTransfers([frame]));
        return;
      }
      if (/\.json$/i.test(name) && withFile(m, bytes, name, (ptr, size, namePtr) => m._sf_web_is_character(ptr, size, namePtr))) {
        progress(`reading the character package ${name}`);
        const { c, info } = await openCharacter(m, bytes, name, needFilesOf(id));
        const o = { c, info, clip: -1, time: 0, speed: 1, loop: true, dqs: false, lookAt: event.data.lookAt || null };
        characterObjects.push(o);
        o.clip = answer(m, withString(m, name, (p) => withString(m, event.data.clip || '', (k) => m._sf_web_character_clip(c, p, k)))).clip;
        for (const [target, weight] of event.data.expression || []) {
          const error = withString(m, target, (t) => m._sf_web_character_expression(c, t, weight));
          if (error) throw new EngineError(`URL parameter expression: ${m.UTF8ToString(error)}`);
        }
        const pose = poseCharacter(m, o, event.data.time);
        const camera = camera27(m, (ptr) => m._sf_web_character_camera(c, width, height, ptr) > 0);
        if (!camera) throw new EngineError(`${name}: the character has nothing to frame`);
        const cloud = releasedCloud(m, m._sf_web_character_splats(c));
        reply({ type: 'character', info, character: characterData(m, c, info), clip: o.clip, pose, cloud, camera },
          [...characterTransfers([pose]), ...transfers(cloud)]);
        return;
      }
      if (withString(m, name, (namePtr) => m._sf_web_is_scene_json(namePtr))) {
        reply({ type: 'progress', stage: `reading the scene ${name}` });
        const s = withBytes(m, bytes, name, (ptr, size) => withString(m, name, (namePtr) => m._sf_web_scene_parse(ptr, size, namePtr)));
        const info = JSON.parse(m.UTF8ToString(m._sf_web_scene_info(s)));
        if (!info.ok) {
          m._sf_web_scene_release(s);
          throw new EngineError(info.error);
        }
        scene = s;
        sceneName = name;
        reply({ type: 'scene', info });
        return;
      }
      progress(`decoding ${name}`);
      const { r, info } = await decodeFile(m, bytes, name, needFilesOf(id), progress);
      const cloud = cloudOf(m, r, info);
      const camera = camera27(m, (ptr) => (m._sf_web_default_camera(r, width, height, ptr), true));
      m._sf_web_release(r);
      reply({ type: 'splats', info, cloud, camera }, transfers(cloud));
    } else if (op === 'object' && event.data.character) {
      if (!scene) throw new Error('no scene is being loaded');
      progress(`reading the character package ${name}`);
      const { objects, character, time } = event.data;
      const { c, info } = await openCharacter(m, event.data.bytes, name, needFilesOf(id));
      const kept = { c, info };
      const clips = [], poses = [];
      try {
        for (const [k, i] of objects.entries()) {
          const d = character[k];
          let clip;
          try {
            clip = answer(m, withString(m, d.resolved, (p) => withString(m, d.clip || '', (q) => m._sf_web_character_clip(c, p, q)))).clip;
          } catch (e) {
            e.object = i;
            throw e;
          }
          const o = { c, info, clip, time: d.time, speed: d.speed, loop: d.loop, dqs: d.dqs, lookAt: null };
          characterObjects.push(o);
          kept.c = 0;  // released with the kept objects from now on
          clips.push(clip);
          poses.push(poseCharacter(m, o, time));
        }
      } finally {
        if (kept.c) m._sf_web_character_release(kept.c);
      }
      const cloud = releasedCloud(m, m._sf_web_character_splats(c));
      reply({ type: 'characters', info, character: characterData(m, c, info), clips, poses, cloud },
        [...characterTransfers(poses), ...transfers(cloud)]);
    } else if (op === 'object' && event.data.hull) {  // static splat hulls: one kept hull per object naming the file
      if (!scene) throw new Error('no scene is being loaded');
      progress(`reading the splat hull ${name}`);
      const { objects, hull, bytes, camera } = event.data;
      const frames = [], infos = [];
      for (const [k, i] of objects.entries()) {
        const d = hull[k];
        let o;
        try {
          // Loaded by the hull loader whatever the file holds, as the scene loader loads a "hull" (its words refuse one that is not).
          if (!withFile(m, bytes, name, (ptr, size, namePtr) => m._sf_web_hull_store(ptr, size, namePtr))) throw new EngineError(`${name}: ran out of memory while loading`);
          const { h, info } = await openHull(m, name, d.mode, needFilesOf(id));
          o = { h, name, toWorld: d.toWorld };
          hullObjects.push(o);
          infos.push(info);
          // Its rest splats' centres, turned by its heading, to the scene's bounds (the transform is the scene's).
          const n = m._sf_web_hull_rest_count(h), rest = m._sf_web_hull_rest_positions(h);
          const c = Math.cos(d.heading * Math.PI / 180), s = Math.sin(d.heading * Math.PI / 180);
          const ptr = m._malloc(Math.max(4, 12 * n));
          if (!ptr) throw new EngineError(`${name}: ran out of memory while loading`);
          try {
            const turned = m.HEAPF32.subarray(ptr / 4, ptr / 4 + 3 * n), from = m.HEAPF32.subarray(rest / 4, rest / 4 + 3 * n);
            for (let j = 0; j < n; ++j) {
              const x = from[3 * j], y = from[3 * j + 1], z = from[3 * j + 2];
              turned[3 * j] = c * x + s * z, turned[3 * j + 1] = y, turned[3 * j + 2] = -s * x + c * z;
            }
            if (!m._sf_web_scene_attach_points(scene, i, ptr, n, 0)) throw new EngineError(`${name}: ran out of memory while loading`);
          } finally {
            m._free(ptr);
          }
          const view = camera || (() => {
            const cam = camera27(m, (p) => m._sf_web_hull_camera(h, 64, 64, p) > 0);
            if (!cam) throw new EngineError(`${name}: the hull has nothing to frame`);
            return { view: cam.slice(0, 12), fx: cam[12], fy: cam[13], cx: cam[14], cy: cam[15], width: 64, height: 64 };
          })();
          frames.push(hullFrame(m, o, view, event.data.time));
        } catch (e) {
          e.object = i;
          throw e;
        }
      }
      reply({ type: 'hulls', infos, frames }, hullTransfers(frames));
    } else if (op === 'object' && event.data.gltf) {
      if (!scene) throw new Error('no scene is being loaded');
      progress(`reading ${name}`);
      const { objects, gltf, time } = event.data;
      const { g, info } = await openGltf(m, event.data.bytes, name, needFilesOf(id));
      if (!gltf[0].gltf_key && gaussiansOnly(info, gltf[0].clip)) {  // a "file" of gaussians alone: a splat file
        models.pop();
        m._sf_web_gltf_release(g);
        const { r, info: splats } = await decodeFile(m, event.data.bytes, name, needFilesOf(id), progress);
        const cloud = cloudOf(m, r, splats);
        let attached = true;
        for (const i of objects) attached = attached && m._sf_web_scene_attach(scene, i, r) !== 0;
        m._sf_web_release(r);
        if (!attached) throw new EngineError(`${name}: ran out of memory while loading`);
        reply({ type: 'cloud', info: splats, cloud }, transfers(cloud));
        return;
      }
      const poses = [], clips = [];
      for (const [k, i] of objects.entries()) {
        const c = gltf[k];
        let clip;
        try {
          clip = objectClip(m, g, name, c.clip);
        } catch (e) {
          e.object = i;
          throw e;
        }
        const o = { model: g, info, clip, time: c.time, speed: c.speed, loop: c.loop, dqs: c.dqs };
        gltfObjects.push(o);
        poses.push(poseObject(m, o, time));
        if (!m._sf_web_scene_attach_gltf(scene, i, g)) throw new EngineError(`${name}: ran out of memory while loading`);
        clips.push(clip);
      }
      const cloud = modelCloud(m, g, info);
      reply({ type: 'model', info, model: modelData(m, g, info), clips, poses, cloud },
        [...poseTransfers(poses), ...(cloud ? transfers(cloud) : [])]);
    } else if (op === 'pose') {
      const poses = gltfObjects.map((o) => poseObject(m, o, event.data.time));
      const characters = characterObjects.map((o) => poseCharacter(m, o, event.data.time));
      reply({ type: 'poses', poses, characters }, [...poseTransfers(poses), ...characterTransfers(characters)]);
    } else if (op === 'hull-frame') {  // every kept hull's frame inputs for this camera and time
      const frames = hullObjects.map((o) => hullFrame(m, o, event.data.camera, event.data.time));
      reply({ type: 'hull-frames', frames }, hullTransfers(frames));
    } else if (op === 'clip') {
      const k = event.data.object;
      if (k < gltfObjects.length) gltfObjects[k].clip = event.data.clip;
      else characterObjects[k - gltfObjects.length].clip = event.data.clip;
      reply({ type: 'clip' });
    } else if (op === 'object') {
      if (!scene) throw new Error('no scene is being loaded');
      progress(`decoding ${name}`);
      const { r, info } = await decodeFile(m, event.data.bytes, name, needFilesOf(id), progress);
      const cloud = cloudOf(m, r, info);
      let attached = true;
      for (const i of event.data.objects) attached = attached && m._sf_web_scene_attach(scene, i, r) !== 0;
      m._sf_web_release(r);
      if (!attached) throw new EngineError(`${name}: ran out of memory while loading`);
      reply({ type: 'cloud', info, cloud }, transfers(cloud));
    } else if (op === 'scene-camera') {
      if (!scene) throw new Error('no scene is being loaded');
      let status = 0;
      const camera = camera27(m, (ptr) => (status = m._sf_web_scene_camera(scene, event.data.width, event.data.height, ptr)) > 0);
      releaseScene(m);
      if (status === 0) throw new EngineError(`${sceneName}: the scene has nothing to frame (no splats and no camera)`);
      if (!camera) throw new EngineError(`${sceneName}: the scene could not be read again for its camera`);
      reply({ type: 'camera', camera });
    } else if (op === 'scene-points') {  // a generator object's live centres of its first run, for the bounds
      if (!scene) throw new Error('no scene is being loaded');
      const { object, positions } = event.data;
      const ptr = m._malloc(Math.max(4, positions.byteLength));
      if (!ptr) throw new EngineError(`${name}: ran out of memory while loading`);
      try {
        m.HEAPF32.set(positions, ptr / 4);
        if (!m._sf_web_scene_attach_points(scene, object, ptr, positions.length / 3, event.data.capture === false ? 0 : 1)) throw new EngineError(`${name}: ran out of memory while loading`);
      } finally {
        m._free(ptr);
      }
      reply({ type: 'attached' });
    } else if (op === 'is-generator') {
      reply({ type: 'kind', generator: withString(m, name, (namePtr) => m._sf_web_is_generator(namePtr)) !== 0 });
    } else if (op === 'generator-contract') {
      const contract = answer(m, withString(m, JSON.stringify({ path: name, ...event.data.signature }), (p) => m._sf_web_generator_contract(p)));
      reply({ type: 'contract', contract });
    } else if (op === 'generator-camera') {
      const { positions, width, height } = event.data;
      const ptr = m._malloc(Math.max(4, positions.byteLength));
      if (!ptr) throw new EngineError(`${name}: ran out of memory while framing it`);
      let camera;
      try {
        m.HEAPF32.set(positions, ptr / 4);
        camera = camera27(m, (out) => m._sf_web_generator_camera(ptr, positions.length / 3, width, height, out) > 0);
      } finally {
        m._free(ptr);
      }
      if (!camera) throw new EngineError(`${name}: the generator's frame has nothing to frame (num_points is 0)`);
      reply({ type: 'camera', camera });
    } else if (op === 'close') {
      releaseScene(m);
      releaseModels(m);  // those of a load that failed part way
      reply({ type: 'closed' });
    } else {
      throw new Error(`unknown request '${op}'`);
    }
  } catch (e) {
    // The engine's messages name the file; anything else (the module failing to start or running out of memory) is
    // named here.
    reply({ type: 'error', object: e && e.object, message: e instanceof EngineError ? e.message : `${name || op}: ${e && e.message ? e.message : e}` });
  }
}
