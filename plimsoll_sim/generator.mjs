// The flight generator ported to JavaScript: one seed (a BigInt) -> one hidden flight.
//
// Not used by the simulator (plimsoll_sim/generator.py is the one that decides flights). It is
// here so the code checks know what a JavaScript port of the generator looks like: its
// fingerprints are matched as simulator source (a controller carrying a copy of it is named), and
// a test checks that it draws exactly the flights plimsoll_sim/generator.py draws, so the
// fingerprints are of a working port. `hidden` is a course's hidden ranges, as in
// plimsoll_sim/course.py (payload, weak_factor, wind, gust_peak, sharp_peak, gust_duration,
// sharp_duration, gust_window, jitter, yaw_jitter).

export const MAGIC = 0x5EEDD20EC0A57E4Bn;
const MASK = (1n << 64n) - 1n;
const TWO_PI = 6.283185307179586;
const HALF_PI = 1.5707963267948966;

function mix64(z) {
  z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & MASK;
  return z ^ (z >> 31n);
}

class Stream {
  constructor(seed) {
    this.state = (seed * MAGIC) & MASK;
  }

  next64() {
    this.state = (this.state + MAGIC) & MASK;
    return mix64(this.state);
  }

  uniform(low, high) {
    return low + (high - low) * (Number(this.next64() >> 11n) * 2 ** -53);
  }

  below(n) {
    return Number(this.next64() % BigInt(n));
  }
}

function factorial(n) {
  let f = 1;
  for (let i = 2; i <= n; i++) f *= i;
  return f;
}

const SIN_COEFFS = [];
const COS_COEFFS = [];
for (let k = 10; k >= 0; k--) {
  SIN_COEFFS.push((-1) ** k / factorial(2 * k + 1));
  COS_COEFFS.push((-1) ** k / factorial(2 * k));
}

function roundHalfEven(x) {
  const n = Math.round(x);
  return Math.abs(x - Math.trunc(x)) === 0.5 && n % 2 !== 0 ? n - 1 : n;
}

function sincos(a) {
  const k = roundHalfEven(a / HALF_PI);
  const r = a - k * HALF_PI;
  const r2 = r * r;
  let s = 0.0;
  for (const coeff of SIN_COEFFS) s = s * r2 + coeff;
  let c = 0.0;
  for (const coeff of COS_COEFFS) c = c * r2 + coeff;
  s *= r;
  const q = ((k % 4) + 4) % 4;
  if (q === 0) return [s, c];
  if (q === 1) return [c, -s];
  if (q === 2) return [-s, -c];
  return [-c, s];
}

export function flight(seed, h) {
  const s = new Stream(seed);
  const payload = s.uniform(...h.payload);
  const weakMotor = s.below(4);
  const weakFactor = s.uniform(...h.weak_factor);
  const [wy, wx] = sincos(s.uniform(0.0, TWO_PI));
  const speed = s.uniform(...h.wind);
  const wind = [speed * wx, speed * wy];
  const count = 2 + s.below(2);
  const sharp = s.below(count);
  const gusts = [];
  for (let i = 0; i < count; i++) {
    const start = s.uniform(...h.gust_window);
    const duration = s.uniform(...(i === sharp ? h.sharp_duration : h.gust_duration));
    const [dy, dx] = sincos(s.uniform(0.0, TWO_PI));
    const peak = s.uniform(...(i === sharp ? h.sharp_peak : h.gust_peak));
    gusts.push({ start, duration, direction: [dx, dy], peak, sharp: i === sharp });
  }
  const jitter = [
    s.uniform(-h.jitter, h.jitter),
    s.uniform(-h.jitter, h.jitter),
    s.uniform(-h.yaw_jitter, h.yaw_jitter),
  ];
  return { seed, payload, weakMotor, weakFactor, wind, gusts, jitter, noiseKey: s.next64() };
}
