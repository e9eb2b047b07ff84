// Runs an ONNX model in ONNX Runtime (onnxruntime-node, CPU) on float32 inputs read from files.
// usage: node run_onnx.js MODEL.onnx INPUT.bin B,C,H,W OUTPUT.bin [REPEATS]
// Writes the first output as raw little-endian float32 to OUTPUT.bin (the others to OUTPUT.bin.1,
// OUTPUT.bin.2, ...) and prints one JSON line: {"name": ..., "dims": [...], "ms": [per-run
// milliseconds], "outputs": [{"name": ..., "dims": [...]}, ...]}.
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [model, input, dimsText, output, repeatsText] = process.argv.slice(2);
  if (!output) {
    console.error('usage: node run_onnx.js MODEL.onnx INPUT.bin B,C,H,W OUTPUT.bin [REPEATS]');
    process.exit(2);
  }
  const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));
  const dims = dimsText.split(',').map(Number);
  const bytes = fs.readFileSync(input);
  const data = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: Number(process.env.ORT_THREADS || 0) });
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', data, dims) };
  const ms = [];
  let result;
  for (let i = 0; i < Number(repeatsText || 1); ++i) {
    const t0 = process.hrtime.bigint();
    result = await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const outputs = session.outputNames.map((name, i) => {
    const out = result[name];
    fs.writeFileSync(i === 0 ? output : `${output}.${i}`, Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength));
    return { name, dims: out.dims };
  });
  console.log(JSON.stringify({ name: outputs[0].name, input: session.inputNames[0], dims: outputs[0].dims, ms, outputs }));
}

main().catch((e) => {
  console.error('run_onnx: ' + (e && e.message ? e.message : e));
  process.exit(1);
});
