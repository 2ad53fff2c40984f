// Unit tests of the fair-deal check: SHA-256 against Node's own, and what checkDeal reports.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes, webcrypto } from "node:crypto";
import { checkDeal, commitmentText, sha256Bytes, sha256Hex } from "../src/fair.js";

const nodeSha = (bytes) => createHash("sha256").update(bytes).digest("hex");
const hex = (bytes) => Buffer.from(bytes).toString("hex");
const SALT = "000102030405060708090a0b0c0d0e0f";

test("the plain SHA-256 equals Node's for every length around the block edges", () => {
  for (let n = 0; n < 300; n++) {
    const bytes = new Uint8Array(randomBytes(n));
    assert.equal(hex(sha256Bytes(bytes)), nodeSha(bytes), `length ${n}`);
  }
  const big = new Uint8Array(randomBytes(100_000));
  assert.equal(hex(sha256Bytes(big)), nodeSha(big));
  assert.equal(hex(sha256Bytes(new TextEncoder().encode("abc"))),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});

test("the commitment text and its hash are the documented ones", async () => {
  assert.equal(commitmentText("42", SALT), `dominoes-deal/1:42:${SALT}`);
  // printf 'dominoes-deal/1:42:000102030405060708090a0b0c0d0e0f' | sha256sum
  const want = "37d992d2678f310bcc10c56bab491e658679e1863133b04ebed48068eb8e57d3";
  assert.deepEqual(await sha256Hex(commitmentText("42", SALT), webcrypto.subtle),
    { hex: want, by: "crypto.subtle" });
  assert.deepEqual(await sha256Hex(commitmentText("42", SALT), null), { hex: want, by: "script" });
});

function transcript(seed, salt = SALT) {
  return { seed, salt, commitment: nodeSha(`dominoes-deal/1:${seed}:${salt}`) };
}

test("an honest reveal is verified against the commitment seen at the start", async () => {
  const t = transcript("4611686018427387903"); // beyond 2**53: kept as text, every digit counts
  for (const subtle of [webcrypto.subtle, null]) {
    const got = await checkDeal({ transcript: t, seen: t.commitment, shown: t.commitment, subtle });
    assert.equal(got.status, "verified");
    assert.equal(got.against, "start");
    assert.equal(got.computed, t.commitment);
  }
});

test("only the commitment shown now is compared when none was seen during the game", async () => {
  const t = transcript("7");
  const got = await checkDeal({ transcript: t, seen: null, shown: t.commitment, subtle: null });
  assert.equal(got.status, "verified");
  assert.equal(got.against, "now");
});

test("a seed that does not hash to the commitment seen at the start is a mismatch", async () => {
  const seenAtStart = transcript("1000").commitment;
  // the server reveals another seed, with a commitment made to match it afterwards
  const swapped = transcript("1001");
  const got = await checkDeal({ transcript: swapped, seen: seenAtStart, shown: swapped.commitment,
    subtle: null });
  assert.equal(got.status, "mismatch");
  assert.equal(got.against, "start");
  assert.equal(got.computed, swapped.commitment);
});

test("a transcript whose commitment differs from the one shown is a mismatch", async () => {
  const t = transcript("55");
  const other = { ...t, commitment: "ab".repeat(32) };
  const got = await checkDeal({ transcript: other, seen: t.commitment, subtle: null });
  assert.equal(got.status, "mismatch");
});

test("malformed reveals and missing ones are told apart", async () => {
  const t = transcript("55");
  for (const bad of [{ ...t, seed: 55 }, { ...t, seed: "055" }, { ...t, salt: SALT.toUpperCase() },
    { ...t, commitment: "00" }]) {
    assert.equal((await checkDeal({ transcript: bad, seen: t.commitment })).status, "mismatch");
  }
  const old = await checkDeal({ transcript: { rounds: [] }, seen: null, shown: null });
  assert.equal(old.status, "unavailable");
  const unseen = await checkDeal({ transcript: t, seen: null, shown: null });
  assert.equal(unseen.status, "unavailable");
});
