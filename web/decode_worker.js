// The page's decoder, off the main thread: the engine's decodeSplats compiled to WebAssembly (web/wasm/,
// sf_decode.js + sf_decode.wasm) turns a file's bytes into the frame's arrays. Messages in: {bytes, name,
// width, height}; out: {type: 'progress', stage} while it works, then {type: 'done', info, cloud, camera} with
// the arrays transferred, or {type: 'error', message} with the words the command line prints.
importScripts('sf_decode.js');

let modulePromise = null;
function decoder() {
  if (!modulePromise) modulePromise = createSplatDecoder();
  return modulePromise;
}

function copyFloats(m, ptr, count) {
  return new Float32Array(m.HEAPF32.buffer, ptr, count).slice();
}

self.onmessage = async (event) => {
  const { bytes, name, width, height } = event.data;
  try {
    self.postMessage({ type: 'progress', stage: 'starting the decoder' });
    const m = await decoder();
    self.postMessage({ type: 'progress', stage: `decoding ${name}` });
    const data = new Uint8Array(bytes);
    const ptr = m._sf_web_alloc(data.length);
    if (!ptr) throw new Error(`${name}: ran out of memory while loading`);
    m.HEAPU8.set(data, ptr);
    const nameBytes = m.lengthBytesUTF8(name) + 1;
    const namePtr = m._malloc(nameBytes);
    m.stringToUTF8(name, namePtr, nameBytes);
    const r = m._sf_web_decode(ptr, data.length, namePtr);
    m._sf_web_free_bytes(ptr);
    m._free(namePtr);
    const info = JSON.parse(m.UTF8ToString(m._sf_web_info(r)));
    if (!info.ok) {
      m._sf_web_release(r);
      self.postMessage({ type: 'error', message: info.error });
      return;
    }
    const n = info.gaussians;
    const cloud = {
      count: n, shDegree: info.sh_degree, antialiased: info.antialiased, linear: info.linear, screenFilter: info.screen_filter,
      positions: copyFloats(m, m._sf_web_positions(r), 3 * n),
      covariances: copyFloats(m, m._sf_web_covariances(r), 6 * n),
      opacities: copyFloats(m, m._sf_web_opacities(r), n),
      sh: copyFloats(m, m._sf_web_sh(r), m._sf_web_sh_floats(r)),
    };
    const camPtr = m._malloc(26 * 4);
    m._sf_web_default_camera(r, width, height, camPtr);
    const camera = Array.from(new Float32Array(m.HEAPF32.buffer, camPtr, 26));
    m._free(camPtr);
    m._sf_web_release(r);
    self.postMessage({ type: 'done', info, cloud, camera },
                     [cloud.positions.buffer, cloud.covariances.buffer, cloud.opacities.buffer, cloud.sh.buffer]);
  } catch (e) {
    self.postMessage({ type: 'error', message: `${name}: ${e && e.message ? e.message : e}` });
  }
};
