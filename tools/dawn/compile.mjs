// Compiles gpuprep's stage shaders with Tint, Dawn's WGSL compiler (a front end apart from naga's,
// with its own validation and uniformity analysis), and creates each entry point's compute
// pipeline with the override values gpuprep gives it, under WebGPU's default limits, on Dawn's null
// back end (no driver needed: compiled and validated; replay.mjs runs batches on Dawn's Vulkan).
//
// usage: node compile.mjs SHADERS.json
//   SHADERS.json: [{"file": name, "source": WGSL, "entry_points": [{"name", "constants": {..}}]}]
//   (src/gpu/translations.rs writes it); exits 1, naming the shader, on any message or error.
import { create, globals } from 'webgpu';
import fs from 'node:fs';

Object.assign(globalThis, globals);
const gpu = create(['backend=null']);
const adapter = await gpu.requestAdapter();
if (!adapter) {
  console.error('compile.mjs: Dawn opened no adapter');
  process.exit(1);
}
const device = await adapter.requestDevice();
const shaders = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
let failures = 0;
let pipelines = 0;
for (const shader of shaders) {
  const module = device.createShaderModule({ label: shader.file, code: shader.source });
  const info = await module.getCompilationInfo();
  for (const m of info.messages) {
    console.error(`${shader.file}:${m.lineNum}:${m.linePos}: ${m.type}: ${m.message}`);
    failures += 1;
  }
  for (const entry of shader.entry_points) {
    device.pushErrorScope('validation');
    device.createComputePipeline({
      label: `${shader.file}:${entry.name}`,
      layout: 'auto',
      compute: { module, entryPoint: entry.name, constants: entry.constants },
    });
    const error = await device.popErrorScope();
    if (error) {
      console.error(`${shader.file}:${entry.name}: ${error.message}`);
      failures += 1;
    }
    pipelines += 1;
  }
}
console.log(`Tint: ${shaders.length} shaders, ${pipelines} pipelines, ${failures} failures`);
device.destroy();
process.exit(failures === 0 ? 0 : 1);
