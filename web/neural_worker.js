// The page's neural generator runner, off the main thread: an ONNX model of the gaussian generator contract
// (docs/neural.md) run by onnxruntime-web's WebAssembly execution provider (ort/, copied into the export by
// `splatforge export-web` from the npm package scripts/setup.sh fetches). The engine decides what the model is
// (web/wasm/neural_api.cpp: the contract) and the GPU decodes what it outputs (shaders/neural.wgsl); this worker
// only loads the models and runs them, each kept by its name (a scene's objects naming one model share it).
// Each request carries an `id` its answer repeats:
//   {op: 'open', bytes, name, reset}: the model loaded (with `reset`, the models kept before let go), answered {type: 'signature', inputs, outputs, metadata}: its
//     inputs and outputs as the runtime lists them ({name, type: 'float32', 'float16', 'int64', ..., shape: [numbers
//     or dimension names] or null}) and the model's metadata_props (read from the protobuf here: the runtime does
//     not give them).
//   {op: 'run', name, feeds: [{name, type, dims, data}]}: one run of model `name`, answered {type: 'outputs', outputs: {name: {type,
//     dims, bytes (the tensor's raw little-endian bytes: float16 as its 16-bit patterns), value (the first element
//     as a number, for integer tensors)}}}.
// A failure is {type: 'error', message}, naming the model. The runtime runs on this thread (numThreads 1: the page
// is not cross-origin isolated, so it has no SharedArrayBuffer for the runtime's threads).
import * as ort from './ort/ort.wasm.min.mjs';

ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = new URL('ort/', import.meta.url).href;

const sessions = new Map();  // model name -> its InferenceSession

// The model's top-level protobuf fields (ModelProto), walked without a schema: whether the message parses at the
// top level (every field's length inside the bytes), whether it has a graph (field 7), and its metadata_props
// (field 14: StringStringEntryProto, key 1, value 2).
function readModelHeader(bytes) {
  const utf8 = new TextDecoder();
  const walk = (begin, end, visit) => {
    let at = begin;
    const varint = () => {
      let v = 0, shift = 0;
      for (;;) {
        if (at >= end || shift > 63) throw new Error('truncated varint');
        const b = bytes[at++];
        v += (b & 0x7f) * 2 ** shift;
        if (!(b & 0x80)) return v;
        shift += 7;
      }
    };
    while (at < end) {
      const key = varint(), field = Math.floor(key / 8), wire = key % 8;
      if (field === 0) throw new Error('field 0');
      if (wire === 0) varint();
      else if (wire === 1) at += 8;
      else if (wire === 5) at += 4;
      else if (wire === 2) {
        const length = varint();
        if (at + length > end) throw new Error('length past the end');
        visit(field, at, at + length);
        at += length;
      } else {
        throw new Error(`wire type ${wire}`);
      }
      if (at > end) throw new Error('past the end');
    }
  };
  const metadata = {};
  let graph = false;
  try {
    walk(0, bytes.length, (field, begin, end) => {
      if (field === 7) graph = true;
      if (field !== 14) return;
      let key = '', value = '';
      walk(begin, end, (f, b, e) => {
        if (f === 1) key = utf8.decode(bytes.subarray(b, e));
        if (f === 2) value = utf8.decode(bytes.subarray(b, e));
      });
      metadata[key] = value;
    });
  } catch {
    return { parses: false, graph, metadata };
  }
  return { parses: true, graph, metadata };
}

function signatureOf(list) {
  return list.map((m) => ({ name: m.name, type: m.isTensor ? m.type : 'undefined', shape: m.isTensor && Array.isArray(m.shape) ? m.shape : null }));
}

async function handle({ op, ...data }) {
  if (op === 'open') {
    if (data.reset) {
      for (const s of sessions.values()) await s.release();
      sessions.clear();
    }
    const modelName = data.name;
    if (sessions.has(modelName)) await sessions.get(modelName).release();
    sessions.delete(modelName);
    const bytes = new Uint8Array(data.bytes);
    // The engine's loader's words for what is not a model (neural/onnx_model.cpp loadOnnx).
    const header = readModelHeader(bytes);
    if (!header.parses) throw new Error(`${modelName}: byte 0: not an ONNX model (the protobuf message does not parse)`);
    if (!header.graph) throw new Error(`${modelName}: byte 0: not an ONNX model (no graph)`);
    let session;
    try {
      session = await ort.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
      sessions.set(modelName, session);
    } catch (e) {
      throw new Error(`${modelName}: onnxruntime-web cannot load the model: ${e && e.message ? e.message : e}`);
    }
    return { type: 'signature', inputs: signatureOf(session.inputMetadata), outputs: signatureOf(session.outputMetadata), metadata: header.metadata };
  }
  if (op === 'run') {
    const modelName = data.name, session = sessions.get(modelName);
    if (!session) throw new Error(`${modelName}: the model is not open`);
    const feeds = {};
    for (const f of data.feeds) feeds[f.name] = new ort.Tensor(f.type, f.data, f.dims);
    let results;
    try {
      results = await session.run(feeds);
    } catch (e) {
      throw new Error(`${modelName}: onnxruntime-web failed to run the model: ${e && e.message ? e.message : e}`);
    }
    const outputs = {}, transfer = [];
    for (const [name, t] of Object.entries(results)) {
      const d = t.data;
      const bytes = new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice();
      const integer = !/^(float|bfloat)/.test(t.type) && t.type !== 'string' && d.length > 0;
      outputs[name] = { type: t.type, dims: Array.from(t.dims, Number), bytes: bytes.buffer, value: integer ? Number(d[0]) : null };
      transfer.push(bytes.buffer);
      t.dispose();
    }
    return { type: 'outputs', outputs, transfer };
  }
  throw new Error(`unknown request '${op}'`);
}

let queue = Promise.resolve();
self.onmessage = (event) => {
  const { id } = event.data;
  queue = queue.then(async () => {
    try {
      const { transfer = [], ...answer } = await handle(event.data);
      self.postMessage({ id, ...answer }, transfer);
    } catch (e) {
      self.postMessage({ id, type: 'error', message: e && e.message ? e.message : String(e) });
    }
  });
};
