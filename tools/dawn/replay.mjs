// Replays a wgpu API trace (the trace.ron and data files wgpu writes with
// `DeviceDescriptor::trace`) on Dawn, Chrome's WebGPU implementation: the same buffers, written
// with the same bytes, the same shaders compiled by Tint with the same override values, the same
// bind groups and dispatches. After each submission, every range copied into a mappable read-back
// buffer is read and written to OUT_DIR/readback-K.bin, in order; src/gpu/dawn.rs compares them
// with the CPU reference's tensors.
//
// usage: node replay.mjs TRACE_DIR OUT_DIR [backend]   (backend: vulkan, the default, or null)
// Prints one JSON line ({"submissions", "dispatched": {pipeline: count}, "readbacks"}); exits 1, saying why, on any
// WebGPU error, an action or command it does not know, or a lost device.
import { create, globals } from 'webgpu';
import fs from 'node:fs';
import path from 'node:path';

Object.assign(globalThis, globals);

// --- RON, as wgpu's trace writes it -------------------------------------------------------------
// A value is: a number, a string, true/false, null (None), an array (a list or a tuple), an
// object (a struct's fields), or {$: name, v: payload} for a named variant or struct
// (`Some(x)`, `PointerId(7)`, `Buffer((...))`, a bare `Performance`).
function parseRon(text) {
  let i = 0;
  const fail = (what) => {
    throw new Error(`trace.ron: ${what} at byte ${i}: ${JSON.stringify(text.slice(i, i + 40))}`);
  };
  const skip = () => {
    for (;;) {
      const c = text[i];
      if (c === ' ' || c === '\n' || c === '\r' || c === '\t' || c === ',') i += 1;
      else if (text.startsWith('//', i)) i = text.indexOf('\n', i) < 0 ? text.length : text.indexOf('\n', i);
      else if (text.startsWith('/*', i)) {
        const end = text.indexOf('*/', i);
        if (end < 0) fail('an unclosed comment');
        i = end + 2;
      }
      else return;
    }
  };
  const ident = () => {
    const m = /^(r#)?[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i, i + 200));
    if (!m) return null;
    i += m[0].length;
    return m[0].replace(/^r#/, '');
  };
  const string = () => {
    let out = '';
    i += 1;
    for (;;) {
      const c = text[i];
      if (c === undefined) fail('unterminated string');
      i += 1;
      if (c === '"') return out;
      if (c !== '\\') { out += c; continue; }
      const e = text[i];
      i += 1;
      if (e === 'u') {
        const end = text.indexOf('}', i);
        out += String.fromCodePoint(parseInt(text.slice(i + 1, end), 16));
        i = end + 1;
      } else {
        out += { n: '\n', t: '\t', r: '\r', 0: '\0' }[e] ?? e;
      }
    }
  };
  // The inside of `( ... )`: the fields of a struct, or the items of a tuple.
  const group = () => {
    i += 1;
    const items = [];
    let fields = null;
    for (;;) {
      skip();
      if (text[i] === ')') { i += 1; break; }
      const start = i;
      const name = ident();
      skip();
      if (name !== null && text[i] === ':' && text[i + 1] !== ':') {
        i += 1;
        (fields ??= {})[name] = value();
      } else {
        i = start;
        items.push(value());
      }
    }
    return fields ?? items;
  };
  const value = () => {
    skip();
    const c = text[i];
    if (c === '"') return string();
    if (c === '[') {
      i += 1;
      const list = [];
      for (;;) {
        skip();
        if (text[i] === ']') { i += 1; return list; }
        list.push(value());
      }
    }
    if (c === '{') {
      i += 1;
      const map = {};
      for (;;) {
        skip();
        if (text[i] === '}') { i += 1; return map; }
        const key = value();
        skip();
        if (text[i] !== ':') fail('a map without its colon');
        i += 1;
        map[key] = value();
      }
    }
    if (c === '(') return group();
    const number = /^-?(?:inf|NaN|[0-9][0-9_]*(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)(?![A-Za-z0-9_])/.exec(text.slice(i, i + 64));
    if (number) {
      i += number[0].length;
      const digits = number[0].replaceAll('_', '');
      return digits.endsWith('inf') ? (digits.startsWith('-') ? -Infinity : Infinity) : Number(digits);
    }
    const name = ident();
    if (name === null) fail('an unknown value');
    if (name === 'true' || name === 'false') return name === 'true';
    if (name === 'None') return null;
    if (text[i] !== '(') return { $: name };
    const inside = group();
    const v = Array.isArray(inside) && inside.length === 1 ? inside[0] : inside;
    return { $: name, v };
  };
  const all = value();
  skip();
  if (i < text.length) fail('text after the trace');
  return all;
}

// --- the replay ---------------------------------------------------------------------------------
const [traceDir, outDir, backend = 'vulkan'] = process.argv.slice(2);
const trace = parseRon(fs.readFileSync(path.join(traceDir, 'trace.ron'), 'utf8'));
const file = (data) => {
  if (data.$ !== 'File') throw new Error(`data kept as ${data.$}, not in a file`);
  return path.join(traceDir, data.v);
};
const id = (ref) => (ref && ref.$ === 'PointerId' ? ref.v : ref);
const some = (option) => (option && option.$ === 'Some' ? option.v : option);
const flags = (text) => new Set(text.split('|').map((f) => f.trim()).filter(Boolean));

const gpu = create([`backend=${backend}`]);
const adapter = await gpu.requestAdapter();
if (!adapter) {
  console.error(`replay.mjs: Dawn opened no ${backend} adapter`);
  process.exit(1);
}
const device = await adapter.requestDevice(); // WebGPU's default limits, as the trace's device
const errors = [];
device.onuncapturederror = (event) => errors.push(event.error.message);
device.lost.then((info) => {
  if (info.reason !== 'destroyed') errors.push(`device lost: ${info.message}`);
});

// Objects by the id the trace gives them (an id may be reused once its object is dropped).
const objects = new Map();
const readable = new Set(); // the buffers (objects: an id is reused) wgpu maps to read
const usageBits = {
  MAP_READ: GPUBufferUsage.MAP_READ, MAP_WRITE: GPUBufferUsage.MAP_WRITE,
  COPY_SRC: GPUBufferUsage.COPY_SRC, COPY_DST: GPUBufferUsage.COPY_DST,
  INDEX: GPUBufferUsage.INDEX, VERTEX: GPUBufferUsage.VERTEX, UNIFORM: GPUBufferUsage.UNIFORM,
  STORAGE: GPUBufferUsage.STORAGE, INDIRECT: GPUBufferUsage.INDIRECT,
  QUERY_RESOLVE: GPUBufferUsage.QUERY_RESOLVE,
};
const bufferTypes = { Uniform: 'uniform' };
let submissions = 0;
const dispatched = {}; // pipeline label -> dispatches
const labels = new Map(); // pipeline -> its label
const readbacks = [];

function bufferLayoutEntry(entry) {
  const ty = entry.ty;
  if (ty.$ !== 'Buffer') throw new Error(`a bind group layout entry of ${ty.$}`);
  const kind = ty.v.ty;
  const type = kind.$ === 'Storage' ? (kind.v.read_only ? 'read-only-storage' : 'storage')
    : bufferTypes[kind.$];
  return {
    binding: entry.binding,
    visibility: GPUShaderStage.COMPUTE,
    buffer: {
      type,
      hasDynamicOffset: ty.v.has_dynamic_offset,
      minBindingSize: some(ty.v.min_binding_size) ?? 0,
    },
  };
}

function encode(commands) {
  const encoder = device.createCommandEncoder();
  const copies = [];
  for (const command of commands) {
    const c = command.v;
    switch (command.$) {
      case 'CopyBufferToBuffer': {
        const size = some(c.size) ?? objects.get(id(c.src)).size - c.src_offset;
        encoder.copyBufferToBuffer(objects.get(id(c.src)), c.src_offset, objects.get(id(c.dst)), c.dst_offset, size);
        const dst = objects.get(id(c.dst));
        if (readable.has(dst)) copies.push({ buffer: dst, offset: c.dst_offset, size });
        break;
      }
      case 'ClearBuffer':
        encoder.clearBuffer(objects.get(id(c.dst)), c.offset, some(c.size) ?? undefined);
        break;
      case 'RunComputePass': {
        const pass = encoder.beginComputePass();
        const offsets = c.pass.dynamic_offsets;
        let next = 0;
        let pipeline = null;
        for (const step of c.pass.commands) {
          const s = step.v;
          if (step.$ === 'SetPipeline') {
            pipeline = objects.get(id(s));
            pass.setPipeline(pipeline);
          }
          else if (step.$ === 'SetBindGroup') {
            pass.setBindGroup(s.index, objects.get(id(some(s.bind_group))), offsets.slice(next, next + s.num_dynamic_offsets));
            next += s.num_dynamic_offsets;
          } else if (step.$ === 'DispatchWorkgroups' || step.$ === 'Dispatch') {
            pass.dispatchWorkgroups(...s);
            const label = labels.get(pipeline);
            dispatched[label] = (dispatched[label] ?? 0) + 1;
          } else throw new Error(`a compute pass command the replay does not know: ${step.$}`);
        }
        pass.end();
        break;
      }
      default:
        throw new Error(`a command the replay does not know: ${command.$}`);
    }
  }
  return { buffer: encoder.finish(), copies };
}

for (const action of trace) {
  const a = action.v;
  switch (action.$) {
    case 'Init':
      break;
    case 'CreateBuffer': {
      const [ref, desc] = a;
      const usage = flags(desc.usage);
      // Written by queue.writeBuffer instead of a mapping: MAP_WRITE becomes COPY_DST.
      usage.delete('MAP_WRITE');
      usage.add('COPY_DST');
      let bits = 0;
      for (const f of usage) {
        if (!(f in usageBits)) throw new Error(`a buffer usage the replay does not know: ${f}`);
        bits |= usageBits[f];
      }
      const buffer = device.createBuffer({ label: some(desc.label) ?? undefined, size: desc.size, usage: bits });
      if (usage.has('MAP_READ')) readable.add(buffer);
      objects.set(id(ref), buffer);
      break;
    }
    case 'WriteBuffer': {
      const bytes = fs.readFileSync(file(a.data));
      device.queue.writeBuffer(objects.get(id(a.id)), a.offset, bytes, 0, a.size);
      break;
    }
    case 'CreateShaderModule': {
      const code = fs.readFileSync(file(a.data), 'utf8');
      objects.set(id(a.id), device.createShaderModule({ label: some(a.desc.label) ?? undefined, code }));
      break;
    }
    case 'CreateBindGroupLayout': {
      const [ref, desc] = a;
      objects.set(id(ref), device.createBindGroupLayout({ entries: desc.entries.map(bufferLayoutEntry) }));
      break;
    }
    case 'CreatePipelineLayout': {
      const [ref, desc] = a;
      const layouts = desc.bind_group_layouts.map((l) => objects.get(id(some(l))));
      objects.set(id(ref), device.createPipelineLayout({ bindGroupLayouts: layouts }));
      break;
    }
    case 'CreateComputePipeline': {
      const desc = a.desc;
      const layout = some(desc.layout);
      const label = some(desc.label) ?? '';
      const pipeline = device.createComputePipeline({
        label,
        layout: layout === null ? 'auto' : objects.get(id(layout)),
        compute: {
          module: objects.get(id(desc.stage.module)),
          entryPoint: some(desc.stage.entry_point) ?? undefined,
          constants: desc.stage.constants,
        },
      });
      labels.set(pipeline, `${label}:${some(desc.stage.entry_point) ?? ''}`);
      objects.set(id(a.id), pipeline);
      break;
    }
    case 'GetComputePipelineBindGroupLayout':
      objects.set(id(a.id), objects.get(id(a.pipeline)).getBindGroupLayout(a.index));
      break;
    case 'CreateBindGroup': {
      const [ref, desc] = a;
      const entries = desc.entries.map((entry) => {
        if (entry.resource.$ !== 'Buffer') throw new Error(`a bind group entry of ${entry.resource.$}`);
        const b = entry.resource.v;
        return { binding: entry.binding, resource: { buffer: objects.get(id(b.buffer)), offset: b.offset, size: some(b.size) ?? undefined } };
      });
      objects.set(id(ref), device.createBindGroup({ layout: objects.get(id(desc.layout)), entries }));
      break;
    }
    case 'Submit': {
      const [, commands] = a;
      const { buffer, copies } = encode(commands);
      device.queue.submit([buffer]);
      submissions += 1;
      for (const copy of copies) {
        await copy.buffer.mapAsync(GPUMapMode.READ, copy.offset, copy.size);
        const bytes = new Uint8Array(copy.buffer.getMappedRange(copy.offset, copy.size)).slice();
        copy.buffer.unmap();
        const name = `readback-${readbacks.length}.bin`;
        fs.writeFileSync(path.join(outDir, name), bytes);
        readbacks.push({ file: name, submission: submissions, bytes: bytes.length });
      }
      break;
    }
    // Dropping changes nothing a later action reads; destroying is left to the end.
    case 'DropBuffer': case 'DestroyBuffer': case 'DropBindGroup': case 'DropBindGroupLayout':
    case 'DropPipelineLayout': case 'DropShaderModule': case 'DropComputePipeline':
      break;
    default:
      throw new Error(`an action the replay does not know: ${action.$}`);
  }
  if (errors.length) break;
}
await device.queue.onSubmittedWorkDone();
if (errors.length) {
  console.error(`replay.mjs: Dawn reported: ${errors.join('; ')}`);
  process.exit(1);
}
console.log(JSON.stringify({ submissions, dispatched, readbacks }));
device.destroy();
process.exit(0);
