// Runs Spark's own SPZ code (npm @sparkjsdev/spark, a three.js splat renderer; tools/interop) in node for the
// interop tests (tests/io/interop_test.cpp, docs/formats/interop.md). Spark decodes splat files in its Rust
// WebAssembly module inside a browser web worker. Node has no `Worker`, so this script supplies one over
// worker_threads: it runs the worker code Spark bundles (handed over as a `data:` URL) with the three parts of a
// worker's `self` that code uses. Everything else is Spark's public API, unchanged: ExtSplats and PackedSplats
// loading file bytes, their getSplat decoders, writeSpz and transcodeSpz.
//
//   node spark_spz.mjs read  <spark.module.js> <in.spz> <out.f32> ext|packed
//   node spark_spz.mjs write <spark.module.js> <in.ply> <out.spz> packed|transcode
//
// read: per gaussian, 59 little-endian float32: centre (3), scales (3, linear), quaternion (x, y, z, w),
// opacity, colour (r, g, b: Spark's base colour, 0.5 + C0 * f_dc), SH bands 1-3 (15 coefficients x rgb,
// coefficient major; zero where Spark holds none). `ext` is Spark's float form (ExtSplats: float32 centres,
// float16 opacity, colour and log-scales, 10/10/12-bit axis-angle rotations, shared-exponent SH); `packed` its
// 16-byte form (PackedSplats, what a SplatMesh draws by default: float16 centres, 8-bit colour, opacity and
// log-scales, 8/8/8-bit axis-angle rotations, 7/8/6-bit SH per band).
// write: `packed` loads the PLY into a PackedSplats and calls writeSpz(packedSplats, 3, 12); `transcode` calls
// transcodeSpz on the PLY's bytes (Spark's file-to-SPZ path, without the PackedSplats quantisation).
// Errors (e.g. a file Spark refuses) exit non-zero with Spark's message on stderr.
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Worker as NodeWorker } from 'node:worker_threads';

const [mode, sparkModule, input, output, form] = process.argv.slice(2);

// A browser Worker over worker_threads: Spark posts the compiled WebAssembly module and rpc messages to it, and
// its code answers through self.postMessage. Without a global `self` (as in node) Spark hands its worker code
// over as a data: URL; it listens to the main side only through onmessage.
const workerSelf = `
const { parentPort } = require('node:worker_threads');
globalThis.self = globalThis;
const listeners = new Set();
self.addEventListener = (type, fn) => { if (type === 'message') listeners.add(fn); };
self.removeEventListener = (type, fn) => listeners.delete(fn);
self.postMessage = (data, options) => parentPort.postMessage(data, options?.transfer ?? []);
parentPort.on('message', (data) => { for (const fn of [...listeners]) fn({ data }); });
`;
globalThis.Worker = class {
  constructor(url) {
    const prefix = 'data:text/javascript;charset=utf-8,';
    if (!String(url).startsWith(prefix)) throw new Error(`unexpected worker URL ${String(url).slice(0, 40)}`);
    this.thread = new NodeWorker(workerSelf + decodeURIComponent(String(url).slice(prefix.length)), { eval: true });
    this.thread.on('message', (data) => this.onmessage?.({ data }));
    this.thread.on('error', (error) => {
      console.error(`Spark worker: ${error?.stack ?? error}`);
      process.exit(1);
    });
  }
  postMessage(data, options) { this.thread.postMessage(data, options?.transfer ?? []); }
  addEventListener() {}
  terminate() { this.thread.terminate(); }
};

const spark = await import(pathToFileURL(sparkModule).href);
const bytes = new Uint8Array(fs.readFileSync(input));
const kFloats = 59;

// Signed `bits`-bit field at bit `start` of a little-endian run of u32 words (Spark's packed SH).
function signedField(words, base, start, bits) {
  let v = 0;
  for (let b = 0; b < bits; ++b) v |= ((words[base + ((start + b) >> 5)] >>> ((start + b) & 31)) & 1) << b;
  return v >= 1 << (bits - 1) ? v - (1 << bits) : v;
}

async function read() {
  const fileType = spark.SplatFileType.SPZ;
  const ext = form === 'ext';
  const options = { fileBytes: bytes, fileType };
  const splats = ext ? new spark.ExtSplats(options) : new spark.PackedSplats(options);
  await splats.initialized;
  const n = splats.numSplats, x = splats.extra, enc = splats.splatEncoding ?? {};
  const out = new Float32Array(n * kFloats);
  for (let i = 0; i < n; ++i) {
    const s = splats.getSplat(i), o = out.subarray(i * kFloats, (i + 1) * kFloats);
    o.set([s.center.x, s.center.y, s.center.z, s.scales.x, s.scales.y, s.scales.z]);
    o.set([s.quaternion.x, s.quaternion.y, s.quaternion.z, s.quaternion.w, s.opacity], 6);
    o.set([s.color.r, s.color.g, s.color.b], 11);
    const sh = o.subarray(14);
    if (ext) {
      // ExtSplats: one shared-exponent rgb word per coefficient (utils.decodeExtRgb), 4 words per splat and array:
      // sh1 = band 1 (3) + band 2's first; sh2 = band 2's other 4; sh3a, sh3b = band 3 (4 + 3).
      let k = 0;
      for (const [array, count] of [[x.sh1, 4], [x.sh2, 4], [x.sh3a, 4], [x.sh3b, 3]]) {
        for (let w = 0; w < count; ++w, ++k) {
          if (!array) continue;
          const c = spark.utils.decodeExtRgb(array[i * 4 + w]);
          sh.set([c.r, c.g, c.b], k * 3);
        }
      }
    } else {
      // PackedSplats: band 1 as 9 sint7 (2 words), band 2 as 15 sint8 (4 words), band 3 as 21 sint6 (4 words),
      // scaled by the encoding's shNMax over the largest code.
      const bands = [
        [x.sh1, 2, 7, 9, enc.sh1Max ?? 1, 0],
        [x.sh2, 4, 8, 15, enc.sh2Max ?? 1, 9],
        [x.sh3, 4, 6, 21, enc.sh3Max ?? 1, 24],
      ];
      for (const [array, stride, bits, count, max, at] of bands) {
        if (!array) continue;
        const unit = max / ((1 << (bits - 1)) - 1);
        for (let k = 0; k < count; ++k) sh[at + k] = signedField(array, i * stride, k * bits, bits) * unit;
      }
    }
  }
  fs.writeFileSync(output, Buffer.from(out.buffer));
}

async function write() {
  if (form === 'transcode') {
    // transcodeSpz runs on the main thread's WebAssembly instance, which Spark instantiates asynchronously when
    // imported and exports no promise for; a worker load (compiling and instantiating it again) finishes later.
    await new spark.PackedSplats({ fileBytes: bytes.slice(), fileType: spark.SplatFileType.PLY }).initialized;
    const inputs = [{ fileBytes: bytes, fileType: spark.SplatFileType.PLY }];
    const { fileBytes } = await spark.transcodeSpz({ inputs, maxSh: 3 });
    fs.writeFileSync(output, fileBytes);
    return;
  }
  const packed = new spark.PackedSplats({ fileBytes: bytes, fileType: spark.SplatFileType.PLY });
  await packed.initialized;
  fs.writeFileSync(output, spark.writeSpz(packed, 3, 12).fileBytes);
}

if (mode === 'read') await read();
else if (mode === 'write') await write();
else {
  console.error(`usage: spark_spz.mjs read|write <spark module> <input> <output> ext|packed|transcode (not '${mode}')`);
  process.exit(2);
}
process.exit(0);  // Spark's worker threads would keep node alive
