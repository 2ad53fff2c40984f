/**
 * Table sounds made with the Web Audio API: short beeps and clicks, no audio files and
 * nothing fetched. Browsers refuse audio before a user gesture, so the AudioContext is
 * only created on the page's first click or key press (`armSound`); a sound asked for
 * before that is skipped. Muting is kept in localStorage so it survives a reload.
 *
 * Every sound asked for is also announced as a `table-sound` event on `document`
 * (detail: {name, played}) so tests and the curious can see what would have played.
 */

const KEY = "allfives.muted";
let ctx = null;
let armed = false;

/** Tones of each sound: [frequency Hz, start s, length s, wave, volume]. */
const SOUNDS = {
  turn: [[660, 0, 0.09, "sine", 0.2], [990, 0.11, 0.14, "sine", 0.2]],
  play: [[1400, 0, 0.025, "square", 0.06], [220, 0, 0.06, "triangle", 0.25]],
  low: [[880, 0, 0.08, "square", 0.08], [880, 0.16, 0.08, "square", 0.08]],
  hand: [[523, 0, 0.12, "sine", 0.2], [659, 0.13, 0.12, "sine", 0.2], [784, 0.26, 0.24, "sine", 0.2]],
};

export function isMuted() {
  try {
    return localStorage.getItem(KEY) === "1";
  } catch {
    return false;
  }
}

export function setMuted(muted) {
  try {
    if (muted) localStorage.setItem(KEY, "1");
    else localStorage.removeItem(KEY);
  } catch {
    // storage refused (private mode): the choice lasts for this page only
  }
  if (!muted) unlock();
}

function unlock() {
  if (ctx) {
    if (ctx.state === "suspended") ctx.resume().catch(() => {});
    return;
  }
  const Context = globalThis.AudioContext ?? globalThis.webkitAudioContext;
  if (!Context) return;
  try {
    ctx = new Context();
  } catch {
    ctx = null;
  }
}

/** Waits for the first user gesture to create the AudioContext (idempotent). */
export function armSound() {
  if (armed || typeof window === "undefined") return;
  armed = true;
  const onGesture = () => {
    unlock();
    if (ctx) {
      window.removeEventListener("pointerdown", onGesture, true);
      window.removeEventListener("keydown", onGesture, true);
    }
  };
  window.addEventListener("pointerdown", onGesture, true);
  window.addEventListener("keydown", onGesture, true);
}

/** True once audio may play (a gesture happened and the context runs). */
export function soundReady() {
  return Boolean(ctx && ctx.state === "running");
}

/** Plays sound `name` (turn, play, low, hand) unless muted or audio is not allowed yet. */
export function playSound(name) {
  const tones = SOUNDS[name];
  if (!tones) return;
  const played = !isMuted() && soundReady();
  if (played) {
    const t0 = ctx.currentTime + 0.01;
    for (const [freq, start, length, wave, volume] of tones) {
      const osc = ctx.createOscillator();
      const gain = ctx.createGain();
      osc.type = wave;
      osc.frequency.setValueAtTime(freq, t0 + start);
      gain.gain.setValueAtTime(0.0001, t0 + start);
      gain.gain.exponentialRampToValueAtTime(volume, t0 + start + 0.008);
      gain.gain.exponentialRampToValueAtTime(0.0001, t0 + start + length);
      osc.connect(gain).connect(ctx.destination);
      osc.start(t0 + start);
      osc.stop(t0 + start + length + 0.02);
    }
  }
  document.dispatchEvent(new CustomEvent("table-sound", { detail: { name, played } }));
}

// armed from the start, so that the lobby's clicks count as the gesture too
if (typeof window !== "undefined") armSound();
