// Writes a GPT-2-shaped model folder with random weights (seeded), in the Hugging Face layout the
// engine reads: config.json, model.safetensors (F32, the hub's tensor names and h.N.attn.bias mask
// buffers), and the tokenizer files of an existing model. For tests of the views at scale (many
// heads, long contexts) without downloading or committing a checkpoint.
import { mkdirSync, writeFileSync, copyFileSync, readFileSync } from 'node:fs';
import path from 'node:path';

// mulberry32 + Box-Muller: a small seeded normal generator
function normals(seed) {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(uniform() + 1e-12)) * Math.cos(2 * Math.PI * uniform());
}

/**
 * shape: { n_layer, n_head, n_embd, n_positions }; tokenizerDir: a folder with vocab.json and
 * merges.txt (its vocabulary size is the model's). attnScale: the standard deviation of the query
 * and key weights: larger gives sharper, more varied random attention patterns.
 * Returns the folder's config.
 */
export function writeRandomModel(
  dir,
  { n_layer, n_head, n_embd, n_positions, tokenizerDir, seed = 1, attnScale = 0.25 },
) {
  mkdirSync(dir, { recursive: true });
  const vocab = JSON.parse(readFileSync(path.join(tokenizerDir, 'vocab.json'), 'utf8'));
  const V = Object.keys(vocab).length;
  const C = n_embd;
  const randn = normals(seed);
  const tensors = [];
  const add = (name, shape, fill) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = fill(i);
    tensors.push({ name, shape, data });
  };
  const normal = (std) => () => std * randn();
  add('wte.weight', [V, C], normal(0.02));
  add('wpe.weight', [n_positions, C], normal(0.01));
  for (let l = 0; l < n_layer; l++) {
    const p = `h.${l}.`;
    add(`${p}ln_1.weight`, [C], () => 1);
    add(`${p}ln_1.bias`, [C], () => 0);
    // q and k columns get attnScale, v columns the usual 0.02
    add(`${p}attn.c_attn.weight`, [C, 3 * C], (i) => (i % (3 * C) < 2 * C ? attnScale : 0.02) * randn());
    add(`${p}attn.c_attn.bias`, [3 * C], () => 0);
    add(`${p}attn.c_proj.weight`, [C, C], normal(0.02));
    add(`${p}attn.c_proj.bias`, [C], () => 0);
    add(`${p}ln_2.weight`, [C], () => 1);
    add(`${p}ln_2.bias`, [C], () => 0);
    add(`${p}mlp.c_fc.weight`, [C, 4 * C], normal(0.02));
    add(`${p}mlp.c_fc.bias`, [4 * C], () => 0);
    add(`${p}mlp.c_proj.weight`, [4 * C, C], normal(0.02));
    add(`${p}mlp.c_proj.bias`, [C], () => 0);
    // the hub's checkpoints carry the causal mask as a buffer; the engine must skip it
    add(`${p}attn.bias`, [1, 1, n_positions, n_positions], (i) =>
      i % n_positions <= Math.floor(i / n_positions) ? 1 : 0,
    );
  }
  add('ln_f.weight', [C], () => 1);
  add('ln_f.bias', [C], () => 0);

  const header = {};
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8); // tensor data starts 8-byte aligned
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(
    path.join(dir, 'model.safetensors'),
    Buffer.concat([head, Buffer.from(json), ...tensors.map((t) => Buffer.from(t.data.buffer))]),
  );
  const config = {
    architectures: ['GPT2LMHeadModel'],
    model_type: 'gpt2',
    vocab_size: V,
    n_positions,
    n_ctx: n_positions,
    n_embd: C,
    n_layer,
    n_head,
    n_inner: null,
    layer_norm_epsilon: 1e-5,
    activation_function: 'gelu_new',
  };
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config, null, 2));
  copyFileSync(path.join(tokenizerDir, 'vocab.json'), path.join(dir, 'vocab.json'));
  copyFileSync(path.join(tokenizerDir, 'merges.txt'), path.join(dir, 'merges.txt'));
  return config;
}
