/**
 * Fair deals (docs/notation.md "Fair deals"): the table shows a commitment, the SHA-256 of
 * `dominoes-deal/1:<seed>:<salt>`, from its creation; the finished game's transcript reveals
 * the seed (decimal text) and the salt. `checkDeal` recomputes the hash in the browser
 * (crypto.subtle where the page may use it, else the small implementation below) and
 * compares it with the commitment this browser saw before the game ended.
 * No DOM and no network; `rememberCommitment` / `seenCommitment` use localStorage only.
 */

export const SCHEME = "dominoes-deal/1";
const HEX64 = /^[0-9a-f]{64}$/;
const SEED = /^(0|[1-9][0-9]{0,39})$/;
const SALT = /^[0-9a-f]{32}$/;

/** The exact text the commitment hashes. */
export function commitmentText(seed, salt) {
  return `${SCHEME}:${seed}:${salt}`;
}

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const rotr = (x, n) => (x >>> n) | (x << (32 - n));

/** SHA-256 of `bytes` (a Uint8Array) in plain JavaScript; returns 32 bytes. */
export function sha256Bytes(bytes) {
  const bitLength = bytes.length * 8;
  const padded = new Uint8Array(Math.ceil((bytes.length + 9) / 64) * 64);
  padded.set(bytes);
  padded[bytes.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(bitLength / 2 ** 32));
  view.setUint32(padded.length - 4, bitLength >>> 0);
  const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const w = new Uint32Array(64);
  for (let block = 0; block < padded.length; block += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(block + i * 4);
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, k] = h;
    for (let i = 0; i < 64; i++) {
      const t1 = (k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      k = g; g = f; f = e; e = (d + t1) >>> 0;
      d = c; c = b; b = a; a = (t1 + t2) >>> 0;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  h.forEach((word, i) => outView.setUint32(i * 4, word));
  return out;
}

const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** SHA-256 of a text (UTF-8) as 64 lowercase hex digits, and which code computed it. */
export async function sha256Hex(text, subtle = globalThis.crypto?.subtle) {
  const bytes = new TextEncoder().encode(text);
  if (subtle?.digest) {
    try {
      return { hex: toHex(new Uint8Array(await subtle.digest("SHA-256", bytes))), by: "crypto.subtle" };
    } catch {
      // fall through to the plain implementation
    }
  }
  return { hex: toHex(sha256Bytes(bytes)), by: "script" };
}

/**
 * Checks a finished game's transcript against the commitments this browser saw.
 * `seen`: the commitment noted while the game went on (null when this browser first saw the
 * table after its end); `shown`: the one in the table document now.
 * Returns {status: "verified" | "mismatch" | "unavailable", against: "start" | "now" | null,
 * computed, commitment, by, reason}.
 */
export async function checkDeal({ transcript, seen = null, shown = null, subtle } = {}) {
  const base = { against: seen ? "start" : shown ? "now" : null, computed: null, by: null };
  const seed = transcript?.seed;
  const salt = transcript?.salt;
  const commitment = transcript?.commitment;
  if (seed === undefined && salt === undefined && commitment === undefined) {
    return { ...base, status: "unavailable", commitment: null,
      reason: "this table's transcript reveals no seed (it was created before deals were committed to)" };
  }
  if (typeof seed !== "string" || !SEED.test(seed) || typeof salt !== "string" || !SALT.test(salt)
      || typeof commitment !== "string" || !HEX64.test(commitment)) {
    return { ...base, status: "mismatch", commitment: commitment ?? null,
      reason: "the transcript's seed, salt or commitment is malformed" };
  }
  const reference = seen ?? shown;
  if (!reference) {
    return { ...base, status: "unavailable", commitment,
      reason: "no commitment was shown to compare with" };
  }
  const { hex, by } = await sha256Hex(commitmentText(seed, salt), subtle);
  const out = { ...base, computed: hex, by, commitment };
  if (hex !== reference) {
    return { ...out, status: "mismatch",
      reason: "SHA-256 of the revealed seed and salt is not the commitment shown" };
  }
  if (commitment !== reference) {
    return { ...out, status: "mismatch",
      reason: "the transcript names another commitment than the one shown" };
  }
  return { ...out, status: "verified", reason: null };
}

const KEY = (id) => `allfives.commitment.${id}`;

/** Notes the commitment of table `id` the first time it is seen during the game (kept). */
export function rememberCommitment(id, commitment) {
  if (typeof commitment !== "string" || !HEX64.test(commitment)) return;
  try {
    if (!localStorage.getItem(KEY(id))) localStorage.setItem(KEY(id), commitment);
  } catch {
    // storage unavailable (private mode): the in-memory copy of the page still counts
  }
}

/** The commitment of table `id` noted during the game, or null. */
export function seenCommitment(id) {
  try {
    const value = localStorage.getItem(KEY(id));
    return value && HEX64.test(value) ? value : null;
  } catch {
    return null;
  }
}
