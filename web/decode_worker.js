// The page's decoder, off the main thread: the engine's decodeSplats and scene document compiled to WebAssembly
// (web/wasm/, sf_decode.js + sf_decode.wasm). Each request carries an `id` its answers repeat:
//   {op: 'open', bytes, name, width, height}: a scene JSON (as the engine decides by the name) is read, answered
//     {type: 'scene', info} (web/wasm/decode_api.cpp sf_web_scene_parse) and kept for the requests below; any other
//     file is decoded, answered {type: 'splats', info, cloud, camera} (the starting camera's 26 numbers).
//   {op: 'object', bytes, name, objects}: the file of the kept scene's objects `objects` (indices), decoded and
//     added to the scene's bounds; answered {type: 'cloud', info, cloud}.
//   {op: 'scene-camera', width, height}: the kept scene's starting camera once every object is added, answered
//     {type: 'camera', camera}; the scene is let go.
//   {op: 'close'}: the kept scene is let go (a load that failed); answered {type: 'closed'}.
// While it works it sends {type: 'progress', stage}; a failure is {type: 'error', message}, in the words the command
// line prints. Arrays are transferred.
importScripts('sf_decode.js');

let modulePromise = null;
function decoder() {
  if (!modulePromise) modulePromise = createSplatDecoder();
  return modulePromise;
}

let scene = 0;  // the kept WebScene (a pointer into the module), 0 when none
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

function releaseScene(m) {
  if (scene) m._sf_web_scene_release(scene);
  scene = 0;
}

// Decodes a file: the result (release it with _sf_web_release) and its description; throws the engine's message.
function decodeFile(m, bytes, name) {
  const r = withBytes(m, bytes, name, (ptr, size) => withString(m, name, (namePtr) => m._sf_web_decode(ptr, size, namePtr)));
  const info = JSON.parse(m.UTF8ToString(m._sf_web_info(r)));
  if (!info.ok) {
    m._sf_web_release(r);
    throw new EngineError(info.error);
  }
  return { r, info };
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

function camera26(m, f) {
  const ptr = m._malloc(26 * 4);
  try {
    return f(ptr) ? Array.from(new Float32Array(m.HEAPF32.buffer, ptr, 26)) : null;
  } finally {
    m._free(ptr);
  }
}

self.onmessage = async (event) => {
  const { id, op, name } = event.data;
  const reply = (message, transfer = []) => self.postMessage({ id, ...message }, transfer);
  try {
    reply({ type: 'progress', stage: 'starting the decoder' });
    const m = await decoder();
    if (op === 'open') {
      const { bytes, width, height } = event.data;
      releaseScene(m);
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
      reply({ type: 'progress', stage: `decoding ${name}` });
      const { r, info } = decodeFile(m, bytes, name);
      const cloud = cloudOf(m, r, info);
      const camera = camera26(m, (ptr) => (m._sf_web_default_camera(r, width, height, ptr), true));
      m._sf_web_release(r);
      reply({ type: 'splats', info, cloud, camera }, transfers(cloud));
    } else if (op === 'object') {
      if (!scene) throw new Error('no scene is being loaded');
      reply({ type: 'progress', stage: `decoding ${name}` });
      const { r, info } = decodeFile(m, event.data.bytes, name);
      const cloud = cloudOf(m, r, info);
      let attached = true;
      for (const i of event.data.objects) attached = attached && m._sf_web_scene_attach(scene, i, r) !== 0;
      m._sf_web_release(r);
      if (!attached) throw new EngineError(`${name}: ran out of memory while loading`);
      reply({ type: 'cloud', info, cloud }, transfers(cloud));
    } else if (op === 'scene-camera') {
      if (!scene) throw new Error('no scene is being loaded');
      let status = 0;
      const camera = camera26(m, (ptr) => (status = m._sf_web_scene_camera(scene, event.data.width, event.data.height, ptr)) > 0);
      releaseScene(m);
      if (status === 0) throw new EngineError(`${sceneName}: the scene has nothing to frame (no splats and no camera)`);
      if (!camera) throw new EngineError(`${sceneName}: the scene could not be read again for its camera`);
      reply({ type: 'camera', camera });
    } else if (op === 'close') {
      releaseScene(m);
      reply({ type: 'closed' });
    } else {
      throw new Error(`unknown request '${op}'`);
    }
  } catch (e) {
    // The engine's messages name the file; anything else (the module failing to start or running out of memory) is
    // named here.
    reply({ type: 'error', message: e instanceof EngineError ? e.message : `${name || op}: ${e && e.message ? e.message : e}` });
  }
};
